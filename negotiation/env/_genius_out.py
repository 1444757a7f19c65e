"""A domain of ours as a Genius/NegMAS scenario (``nego domain export``), written by NegMAS.

A profiled domain is written with its raw profiles (weights, evaluations, reservation value,
discount), so importing the folder gives the same numbers back (a line's ends to float
rounding). A drawn domain is written for one
seed: evaluation ``(φ + 1) / 2`` per term (1 at the preferred level, 0 elsewhere; a line from 0 to
1 over a continuous range towards the end the party prefers), its drawn weights, reservation 0.
Binary terms become discrete issues with the values ``true`` and ``false``. The utility files
are named ``seller.xml`` and ``buyer.xml``, so the import maps them back by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Modules, not names (see _genius): no stage runs this one.
from negotiation.env import _domain, _scenario
from negotiation.env._genius import _negmas


def _level_text(level: Any) -> str:
    return ("true" if level else "false") if isinstance(level, bool) else str(level)


def _issue(term: _domain.Term) -> Any:
    from negmas import make_issue

    if term.is_continuous:
        return make_issue(tuple(float(x) for x in term.range), term.name)  # type: ignore[union-attr]
    return make_issue([_level_text(v) for v in term.levels or ()], term.name)


def _line(lo: float, hi: float, e_lo: float, e_hi: float) -> Any:
    from negmas.preferences import AffineFun

    slope = (e_hi - e_lo) / (hi - lo)
    return AffineFun(slope=slope, bias=e_lo - slope * lo)


def _party_values(domain: _domain.Domain, role: str, seed: int, alpha: float) -> tuple[list, list, float, float | None]:
    """``(value functions, weights, reservation, discount)`` of ``role`` in NegMAS's terms."""
    from negmas.preferences import TableFun

    if domain.profiles is not None:
        profile = domain.profiles[role]  # type: ignore[index]
        values = [_line(*t.range, *profile.ends[t.name]) if t.is_continuous  # type: ignore[misc]
                  else TableFun(dict(profile.evaluations[t.name])) for t in domain.terms]
        weights = [profile.weights[t.name] for t in domain.terms]
        reservation = profile.reservation if profile.reservation is not None else 0.0
        return values, weights, reservation, profile.discount
    prefs = _scenario.make_scenario(domain, seed, alpha).prefs(role)  # type: ignore[arg-type]
    values = []
    for t in domain.terms:
        if t.is_continuous:
            high = t.high_preferred_by == role
            values.append(_line(*t.range, 0.0 if high else 1.0, 1.0 if high else 0.0))  # type: ignore[misc]
        else:
            values.append(TableFun({_level_text(v): 1.0 if v == prefs.preferred[t.name] else 0.0
                                    for v in t.levels or ()}))
    return values, [prefs.weights[t.name] for t in domain.terms], 0.0, None


def export_genius(domain: _domain.Domain, folder: Path, seed: int = 0,
                  alpha: float = _scenario.DEFAULT_DIRICHLET_ALPHA) -> list[Path]:
    """Write ``domain`` (a drawn one for ``seed``) as Genius XML files in ``folder``; their paths."""
    _negmas()
    from negmas import make_os
    from negmas.inout import Scenario
    from negmas.preferences import LinearAdditiveUtilityFunction, make_discounted_ufun

    space = make_os([_issue(t) for t in domain.terms], name=domain.name)
    ufuns = []
    for role in _domain.ROLES:
        values, weights, reservation, discount = _party_values(domain, role, seed, alpha)
        ufun = LinearAdditiveUtilityFunction(values=values, weights=weights, outcome_space=space,
                                             reserved_value=reservation, name=role)
        if discount is not None:
            ufun = make_discounted_ufun(ufun, discount_per_round=discount, power_per_round=1.0)
            # NegMAS writes the wrapper's reservation (-inf unless set), not the inner one's
            ufun.name, ufun.reserved_value = role, reservation
        ufuns.append(ufun)
    folder = Path(folder)
    Scenario(outcome_space=space, ufuns=tuple(ufuns)).to_genius_folder(folder)
    return [folder / f"{domain.name}.xml", *(folder / f"{role}.xml" for role in _domain.ROLES)]
