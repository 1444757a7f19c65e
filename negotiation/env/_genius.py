"""Genius/NegMAS scenarios in and out (``nego domain import genius``, ``nego domain export``).

Reading goes through NegMAS's own loader (``negmas.inout.Scenario.load``, the ``anac`` extra);
the result is a profiled domain (``_profile``): the issues become terms (discrete values as
categorical levels, written as text; a real issue as a continuous term), and both utility spaces
become the profiles with their raw weights, evaluations, reservation value and discount. The two
utility files map to the roles by their names when they are ``seller`` and ``buyer``, else in
NegMAS's order (seller first).

Writing builds NegMAS objects and calls NegMAS's Genius writer. A profiled domain is written with
its raw profiles, so importing the folder gives the same numbers back (a line's ends to float
rounding). A drawn domain is written for one seed: evaluation ``(φ + 1) / 2`` per term (1 at the
preferred level, 0 elsewhere; a line from 0 to 1 over a range towards the end the party prefers),
its drawn weights, reservation 0; binary terms become discrete issues valued ``true``/``false``.
The utility files are ``seller.xml`` and ``buyer.xml``, so the import maps them back by name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

# Modules, not names: a stage's derived code deps follow a lazy export to every module holding the
# name (negotiation.pipeline._deps), and no stage runs this one.
from negotiation.env import _domain, _scenario
from negotiation.errors import ConfigError, format_validation_error

_LINEAR_TOLERANCE = 1e-9


def _negmas() -> Any:
    """NegMAS, or the ``ImportError`` the CLI reports with the extra to install (``_install``)."""
    import negmas.inout

    return negmas


def slug(text: str) -> str:
    """A term or domain name from a Genius name: lower case, ``_`` for other characters."""
    name = re.sub(r"[^a-z0-9]+", "_", str(text).strip().lower()).strip("_")
    return name if re.match(r"^[a-z]", name) else f"t_{name}" if name else "t"


def load_scenario(folder: Path) -> Any:
    """NegMAS's scenario of ``folder``, or ``ConfigError`` naming the folder."""
    _negmas()
    from negmas.inout import Scenario

    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder")
    try:
        scenario = Scenario.load(folder, load_stats=False, load_info=False)
    except (OSError, ValueError, KeyError, TypeError, SyntaxError) as exc:  # ParseError is a SyntaxError
        raise ConfigError(f"{folder}: NegMAS cannot read this scenario: {exc}") from exc
    if scenario is None:
        raise ConfigError(f"{folder}: no Genius/NegMAS domain file found")
    if len(scenario.ufuns) != 2:
        names = [u.name for u in scenario.ufuns]
        raise ConfigError(f"{folder}:ufuns: a bilateral scenario needs 2 utility files, got {names!r}")
    return scenario


def _by_role(folder: Path, ufuns: tuple) -> dict[str, Any]:
    names = [str(u.name).replace("\\", "/").split("/")[-1] for u in ufuns]
    if sorted(names) == ["buyer", "seller"]:
        return {u_name: u for u_name, u in zip(names, ufuns)}
    return dict(zip(_domain.ROLES, ufuns))


def _unwrap(where: str, ufun: Any) -> tuple[Any, float | None]:
    """``(linear additive ufun, discount)``; ``ConfigError`` for any other kind."""
    from negmas.preferences import LinearAdditiveUtilityFunction
    from negmas.preferences.discounted import ExpDiscountedUFun

    discount = None
    if isinstance(ufun, ExpDiscountedUFun):
        ufun, discount = ufun.ufun, float(ufun.discount)
    if not isinstance(ufun, LinearAdditiveUtilityFunction):
        raise ConfigError(f"{where}: a linear additive utility space is needed, got {type(ufun).__name__}")
    if abs(float(getattr(ufun, "_bias", 0.0) or 0.0)) > 0:
        raise ConfigError(f"{where}:bias: a constant term is not supported (got {ufun._bias!r})")
    return ufun, discount if discount != 1.0 else None


def _term_and_evals(where: str, issue: Any, vfuns: list[Any]) -> tuple[dict, list[Any]]:
    """One term (as YAML data) and per party its evaluations (level table or ends)."""
    name = slug(issue.name)
    text = f"Issue {issue.name!r} of the imported Genius scenario."
    term: dict[str, Any] = {"name": name, "description": {"seller": text, "buyer": text}}
    if issue.is_continuous():
        lo, hi = float(issue.min_value), float(issue.max_value)
        ends = []
        for vf in vfuns:
            e_lo, e_mid, e_hi = (float(vf(x)) for x in (lo, (lo + hi) / 2, hi))
            if abs(e_mid - (e_lo + e_hi) / 2) > _LINEAR_TOLERANCE * max(1.0, abs(e_lo), abs(e_hi)):
                raise ConfigError(f"{where}:{issue.name}: a real issue needs a linear evaluation, got {vf!r}")
            ends.append([e_lo, e_hi])
        seller_rises = ends[0][1] >= ends[0][0]
        term.update(kind="continuous", range=[lo, hi], unit="units",
                    high_preferred_by="seller" if seller_rises else "buyer")
        return term, ends
    values = list(issue.all)
    levels = [str(v) for v in values]
    if len({lv.casefold() for lv in levels}) != len(levels) or not all(levels):
        raise ConfigError(f"{where}:{issue.name}: values must differ ignoring case, got {levels!r}")
    term.update(kind="categorical", levels=levels)
    return term, [{lv: float(vf(v)) for lv, v in zip(levels, values)} for vf in vfuns]


def domain_data(folder: Path, name: str) -> dict[str, Any]:
    """The YAML data of the profiled domain read from the Genius/NegMAS scenario ``folder``."""
    scenario = load_scenario(folder)
    parties = {}
    for role, ufun in _by_role(folder, scenario.ufuns).items():
        inner, discount = _unwrap(f"{folder}/{ufun.name}", ufun)
        parties[role] = (inner, discount, float(inner.reserved_value))
    terms, profiles = [], {role: {"weights": {}, "evaluations": {}, "ends": {}} for role in _domain.ROLES}
    for k, issue in enumerate(scenario.outcome_space.issues):
        vfuns = [parties[role][0].values[k] for role in _domain.ROLES]
        term, evals = _term_and_evals(f"{folder}/{scenario.outcome_space.name}", issue, vfuns)
        if any(t["name"] == term["name"] for t in terms):
            raise ConfigError(f"{folder}:{issue.name}: its name {term['name']!r} repeats another issue's")
        terms.append(term)
        for role, ev in zip(_domain.ROLES, evals):
            profiles[role]["weights"][term["name"]] = float(parties[role][0].weights[k])
            profiles[role]["ends" if term["kind"] == "continuous" else "evaluations"][term["name"]] = ev
    for role, (_, discount, reserved) in parties.items():
        profiles[role]["reservation"] = reserved if reserved > float("-inf") else None
        profiles[role]["discount"] = discount
    title = f"{scenario.name or folder.name} (imported from Genius)"
    about = f"A negotiation over the issues of the Genius scenario {folder.name!r}."
    return {"name": name, "version": 1, "title": title, "description": {"seller": about, "buyer": about},
            "terms": terms, "profiles": profiles}


def import_genius(folder: Path, name: str | None = None, domains_dir: Path | None = None,
                  overwrite: bool = False) -> Path:
    """Write ``<domains_dir>/<name>.yaml`` from the Genius/NegMAS scenario ``folder``; its path."""
    folder = Path(folder)
    name = name or slug(folder.name)
    target = (Path(domains_dir) if domains_dir else _domain.default_domains_dir()) / f"{name}.yaml"
    if target.exists() and not overwrite:
        raise ConfigError(f"{target}: already exists (pass --force to replace it)")
    data = domain_data(folder, name)
    try:
        _domain.Domain.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(folder, exc)) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return target


# --- out: a domain of ours as a Genius scenario ---


def _level_text(level: Any) -> str:
    return ("true" if level else "false") if isinstance(level, bool) else str(level)


def _issue(term: _domain.Term, levels: int | None = None) -> Any:
    from negmas import make_issue

    if term.is_continuous and levels is None:
        return make_issue(tuple(float(x) for x in term.range), term.name)  # type: ignore[union-attr]
    if term.is_continuous:
        lo, hi = (float(x) for x in term.range)  # type: ignore[union-attr]
        return make_issue([round(lo + (hi - lo) * k / (levels - 1), 6) for k in range(levels)], term.name)
    return make_issue([_level_text(v) for v in term.levels or ()], term.name)


def negmas_space(domain: _domain.Domain, levels: int | None = None) -> Any:
    """The domain's NegMAS outcome space, issues in term order: a continuous term is a real issue,
    or with ``levels`` a grid of that many evenly spaced values (agents that enumerate outcomes)."""
    from negmas import make_os

    if levels is not None and levels < 2:
        raise ConfigError(f"domain {domain.name!r}: a grid needs at least 2 levels, got {levels!r}")
    return make_os([_issue(t, levels) for t in domain.terms], name=domain.name)


def _line(lo: float, hi: float, e_lo: float, e_hi: float) -> Any:
    from negmas.preferences import AffineFun

    slope = (e_hi - e_lo) / (hi - lo)
    return AffineFun(slope=slope, bias=e_lo - slope * lo)


def _party_values(domain: _domain.Domain, prefs: _scenario.PartyPrefs) -> tuple[list, list, float, float | None]:
    """``(value functions, weights, reservation, discount)`` of the party in NegMAS's terms."""
    from negmas.preferences import TableFun

    role = prefs.role
    if domain.profiles is not None:
        profile = domain.profiles[role]  # type: ignore[index]
        values = [_line(*t.range, *profile.ends[t.name]) if t.is_continuous  # type: ignore[misc]
                  else TableFun(dict(profile.evaluations[t.name])) for t in domain.terms]
        weights = [profile.weights[t.name] for t in domain.terms]
        reservation = profile.reservation if profile.reservation is not None else 0.0
        return values, weights, reservation, profile.discount
    values = []
    for t in domain.terms:
        if t.is_continuous:
            high = t.high_preferred_by == role
            values.append(_line(*t.range, 0.0 if high else 1.0, 1.0 if high else 0.0))  # type: ignore[misc]
        else:
            values.append(TableFun({_level_text(v): 1.0 if v == prefs.preferred[t.name] else 0.0
                                    for v in t.levels or ()}))
    return values, [prefs.weights[t.name] for t in domain.terms], 0.0, None


def party_ufun(domain: _domain.Domain, prefs: _scenario.PartyPrefs, space: Any) -> tuple[Any, float | None]:
    """``(linear additive ufun, discount)`` of one party over ``space`` (``negmas_space``): a
    profiled party's raw profile, a drawn party's preferences as ``export_genius`` writes them."""
    _negmas()
    from negmas.preferences import LinearAdditiveUtilityFunction

    values, weights, reservation, discount = _party_values(domain, prefs)
    ufun = LinearAdditiveUtilityFunction(values=values, weights=weights, outcome_space=space,
                                         reserved_value=reservation, name=prefs.role)
    return ufun, discount


def export_genius(domain: _domain.Domain, folder: Path, seed: int = 0,
                  alpha: float = _scenario.DEFAULT_DIRICHLET_ALPHA) -> list[Path]:
    """Write ``domain`` (a drawn one for ``seed``) as Genius XML files in ``folder``; their paths."""
    _negmas()
    from negmas.inout import Scenario
    from negmas.preferences import make_discounted_ufun

    space = negmas_space(domain)
    scenario = _scenario.make_scenario(domain, seed, alpha)
    ufuns = []
    for role in _domain.ROLES:
        ufun, discount = party_ufun(domain, scenario.prefs(role), space)  # type: ignore[arg-type]
        if discount is not None:
            reservation = ufun.reserved_value
            ufun = make_discounted_ufun(ufun, discount_per_round=discount, power_per_round=1.0)
            # NegMAS writes the wrapper's reservation (-inf unless set), not the inner one's
            ufun.name, ufun.reserved_value = role, reservation
        ufuns.append(ufun)
    folder = Path(folder)
    Scenario(outcome_space=space, ufuns=tuple(ufuns)).to_genius_folder(folder)
    return [folder / f"{domain.name}.xml", *(folder / f"{role}.xml" for role in _domain.ROLES)]
