"""Utility of a ledger for one party (DESIGN.md "Utility").

Feature map: a continuous term with range [lo, hi] scores ``±(2 (clip(v) - lo) / (hi - lo) - 1)``,
``+`` for the role preferring high; a categorical or binary term scores ``+1`` at the party's
preferred level and ``-1`` at any other level; a term never named scores ``0``. With weights
summing to one the worst full contract has ``U = -1`` and the best ``U = +1``, so
``Ũ = (U + 1) / 2`` and an unnamed term adds ``w_k / 2`` to ``Ũ``. A name outside the schema
is kept in the ledger and never scored. A value of the wrong type or an unknown level scores as
unnamed and is counted as invalid; an out-of-range number is clipped and counted. A profiled
domain's parties (``PartyPrefs.evaluations``) score ``φ_k = 2 e_k − 1`` from their normalised
evaluations instead (``_table_sums``), so ``Ũ = Σ w_k e_k``.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Iterable, Mapping

from negotiation.env._domain import Domain, Role, Term
from negotiation.env._record import frozen_record
from negotiation.env._scenario import PartyPrefs, Scenario

_FLOAT_MAX = sys.float_info.max
INVALID = object()  # sentinel: the value cannot be scored for this term


@frozen_record
class Score:
    """One party's score of a ledger."""

    u: float
    """Raw utility ``Σ w_k φ_k`` in [-1, 1]."""
    u_tilde: float
    """Normalized utility ``(U - Umin) / (Umax - Umin)`` in [0, 1]."""
    distributive: float
    """Part of ``u_tilde`` from continuous terms (never-named ones count ``w_k / 2``)."""
    integrative: float
    """Part of ``u_tilde`` from categorical and binary terms; the parts sum to ``u_tilde``."""
    n_off_schema: int
    """Ledger names outside the domain (kept, never scored)."""
    n_invalid: int
    """Schema terms whose value has the wrong type or an unknown level (scored as unnamed)."""
    n_out_of_range: int
    """Continuous values outside the range (clipped for scoring)."""


def _is_number(value: Any) -> bool:
    """A finite number that fits a float (an int compares exactly, so 10**400 never overflows)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool) and -_FLOAT_MAX <= value <= _FLOAT_MAX


def canonical_value(term: Term, value: Any) -> Any:
    """The schema value ``value`` stands for, or ``INVALID``.

    Categorical levels match case- and whitespace-insensitively (LLMs write "sedan" for
    "Sedan"); binary terms take JSON booleans only; continuous terms take finite numbers.
    """
    kind = term.kind
    if kind == "continuous":
        return float(value) if _is_number(value) else INVALID
    if kind == "binary":
        return value if isinstance(value, bool) else INVALID
    if isinstance(value, str):
        return term.level_by_folded.get(value.strip().casefold(), INVALID)
    return INVALID


def feature(term: Term, role: Role, preferred: Any, value: Any) -> tuple[float, bool, bool]:
    """``(φ, invalid, out_of_range)`` of one named term for ``role``."""
    canon = canonical_value(term, value)
    if canon is INVALID:
        return 0.0, True, False
    if term.is_continuous:
        lo, hi = term.range  # type: ignore[misc]
        clipped = min(max(canon, lo), hi)
        phi = 2.0 * (clipped - lo) / (hi - lo) - 1.0
        return (phi if term.high_preferred_by == role else -phi), False, clipped != canon
    return (1.0 if canon == preferred else -1.0), False, False


# One scored term, flattened for the per-turn loop: (name, weight, kind, lo, hi, sign, preferred,
# level_by_folded); kind 0 continuous, 1 binary, 2 categorical; sign +1 when the party prefers high.
_Row = tuple[str, float, int, float, float, float, Any, Mapping[str, Any]]
_PLANS: dict[tuple[int, int], tuple[Domain, PartyPrefs, tuple[_Row, ...]]] = {}
_MAX_PLANS = 4096
_KIND_CODE = {"continuous": 0, "binary": 1, "categorical": 2}


def _plan(domain: Domain, prefs: PartyPrefs) -> tuple[_Row, ...]:
    """The party's terms as flat rows, built once per (domain, preferences) pair.

    Scoring runs several times per turn (acceptance checks, tit-for-tat, the record); reading
    pydantic attributes and mappings for every term each time was most of its cost. Keyed by
    identity (both objects are frozen); the entry holds them so an id is never reused.
    """
    key = (id(domain), id(prefs))
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is domain and hit[1] is prefs:
        return hit[2]
    rows = []
    for term in domain.terms:
        lo, hi = term.range if term.is_continuous else (0.0, 1.0)  # type: ignore[misc]
        sign = 1.0 if term.high_preferred_by == prefs.role else -1.0
        rows.append((term.name, prefs.weights[term.name], _KIND_CODE[term.kind], lo, hi, sign,
                     prefs.preferred.get(term.name), term.level_by_folded))
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
        _SUMS.clear()  # keyed by plan ids, which are unique only while the plans are held
    plan = tuple(rows)
    _PLANS[key] = (domain, prefs, plan)
    return plan


_ABSENT = object()
_Sums = tuple[float, float, float, int, int]
# Sums already made, by (id of the party's plan, ledger items), with the values' types: equal
# values of equal builtin scalar types score alike (-0.0 and 0.0 included), but True == 1 == 1.0
# do not (a bool is no number, a number no binary level), so a hit must match the types too.
# A plan id is unique while _PLANS holds the plan, and _SUMS is cleared with _PLANS. Entries hold
# only atoms (no domain or preferences), so the collector untracks them and never rescans them.
# Agents score the same ledgers turn after turn.
_SUMS: dict[tuple[int, tuple], tuple[tuple[type, ...], _Sums]] = {}
_MAX_SUMS = 4096
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _sums(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> _Sums:
    """``_feature_sums``, memoized on ledgers of builtin scalars."""
    key = (id(_plan(domain, prefs)), tuple(ledger.items()))
    try:
        hit = _SUMS.get(key)
    except TypeError:  # an unhashable value (a list from hostile JSON): no memo
        return _feature_sums(domain, prefs, ledger)
    types = tuple(map(type, ledger.values()))
    if hit is not None and hit[0] == types:
        return hit[1]
    sums = _feature_sums(domain, prefs, ledger)
    if _SCALARS.issuperset(types):
        if len(_SUMS) >= _MAX_SUMS:
            _SUMS.clear()
        _SUMS[key] = (types, sums)
    return sums


def _feature_sums(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> _Sums:
    """``(U, distributive, integrative, n_invalid, n_out_of_range)`` of ``ledger`` for ``prefs``.

    ``feature`` per named term, summed in domain order; the loop inlines it (same arithmetic,
    same order, so the same floats) because it runs for every term several times per turn.
    """
    if prefs.evaluations is not None:
        return _table_sums(domain, prefs, ledger)
    u = dist = integ = 0.0
    n_invalid = n_oor = 0
    get, isfinite = ledger.get, math.isfinite
    for name, w, kind, lo, hi, sign, preferred, folded in _plan(domain, prefs):
        phi = 0.0
        value = get(name, _ABSENT)
        if value is not _ABSENT:
            if kind == 0:
                number = type(value)
                if (isfinite(value) if number is float else -_FLOAT_MAX <= value <= _FLOAT_MAX if number is int
                        else _is_number(value)):
                    canon = float(value)
                    # min(max(canon, lo), hi) without the two calls (same result, -0.0 included)
                    clipped = lo if lo > canon else canon
                    if hi < clipped:
                        clipped = hi
                    phi = 2.0 * (clipped - lo) / (hi - lo) - 1.0
                    if sign < 0:
                        phi = -phi
                    if clipped != canon:
                        n_oor += 1
                else:
                    n_invalid += 1
            else:
                canon = (value if isinstance(value, bool) else INVALID) if kind == 1 else (
                    folded.get(value.strip().casefold(), INVALID) if isinstance(value, str) else INVALID)
                if canon is INVALID:
                    n_invalid += 1
                else:
                    phi = 1.0 if canon == preferred else -1.0
        u += w * phi
        if kind == 0:
            dist += w * (phi + 1.0) / 2.0
        else:
            integ += w * (phi + 1.0) / 2.0
    return u, dist, integ, n_invalid, n_oor


def _table_sums(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> _Sums:
    """``_feature_sums`` for a profiled party: ``e_k`` from its evaluations (½ when unnamed or
    invalid, as φ = 0), linear between the ends of a continuous term."""
    u = dist = integ = 0.0
    n_invalid = n_oor = 0
    evals = prefs.evaluations or {}
    for term in domain.terms:
        name, w, e = term.name, prefs.weights[term.name], 0.5
        value = ledger.get(name, _ABSENT)
        canon = INVALID if value is _ABSENT else canonical_value(term, value)
        if canon is INVALID:
            n_invalid += value is not _ABSENT
        elif term.is_continuous:
            (lo, hi), (e_lo, e_hi) = term.range, evals[name]  # type: ignore[misc]
            clipped = min(max(canon, lo), hi)
            n_oor += clipped != canon
            e = e_lo + (e_hi - e_lo) * (clipped - lo) / (hi - lo)
        else:
            e = evals[name][canon]
        u += w * (2.0 * e - 1.0)
        if term.is_continuous:
            dist += w * e
        else:
            integ += w * e
    return u, dist, integ, n_invalid, n_oor


# Per domain, what checking a named term needs: name -> (kind code, lo, hi, level_by_folded).
_CHECKS: dict[int, tuple[Domain, dict[str, tuple[int, float, float, Mapping[str, Any]]]]] = {}


def term_issues(domain: Domain, terms: Iterable[tuple[str, Any]]) -> tuple[int, int, int]:
    """``(off schema, invalid, out of range)`` among named ``terms``: ``canonical_value`` per
    term and the range check, inlined on flat rows (the engine asks it every turn)."""
    hit = _CHECKS.get(id(domain))
    if hit is None or hit[0] is not domain:
        rows = {t.name: (_KIND_CODE[t.kind], *(t.range if t.is_continuous else (0.0, 1.0)), t.level_by_folded)
                for t in domain.terms}
        hit = _CHECKS[id(domain)] = (domain, rows)  # domains are few; the entry holds its domain
    rows, off = hit[1], 0
    inv = oor = 0
    for name, value in terms:
        row = rows.get(name)
        if row is None:
            off += 1
            continue
        kind, lo, hi, folded = row
        if kind == 0:
            number = type(value)
            if not (math.isfinite(value) if number is float else -_FLOAT_MAX <= value <= _FLOAT_MAX
                    if number is int else _is_number(value)):
                inv += 1
            elif not lo <= float(value) <= hi:
                oor += 1
        elif kind == 1:
            inv += not isinstance(value, bool)
        else:
            inv += not isinstance(value, str) or value.strip().casefold() not in folded
    return off, inv, oor


def score_prefs(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> Score:
    """Score ``ledger`` (term name -> value) for the party with ``prefs`` in ``domain``."""
    u, dist, integ, n_invalid, n_oor = _sums(domain, prefs, ledger)
    index = domain.term_index
    n_off = sum(1 for name in ledger if name not in index)
    return Score(u, _u_tilde(dist, integ), dist, integ, n_off, n_invalid, n_oor)


def _u_tilde(dist: float, integ: float) -> float:
    # Ũ = (U + 1) / 2 mathematically; summing the non-negative per-term parts instead keeps it
    # inside [0, 1] under rounding ((U + 1) / 2 gave -1.1e-16 for a worst contract) and makes
    # the distributive/integrative split add up exactly. Weights may sum to 1 + 1e-16: clip.
    return min(1.0, dist + integ)


def u_tilde(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> float:
    """``score_prefs(domain, prefs, ledger).u_tilde`` without building the score (agents ask it
    every turn)."""
    _, dist, integ, _, _ = _sums(domain, prefs, ledger)
    return _u_tilde(dist, integ)


def score_ledger(scenario: Scenario, role: Role, ledger: Mapping[str, Any]) -> Score:
    """Score ``ledger`` for ``role`` in ``scenario``."""
    return score_prefs(scenario.domain, scenario.prefs(role), ledger)
