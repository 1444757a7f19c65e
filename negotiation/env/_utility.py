"""Utility of a ledger for one party (DESIGN.md "Utility").

Feature map: a continuous term with range [lo, hi] scores ``±(2 (clip(v) - lo) / (hi - lo) - 1)``,
``+`` for the role preferring high; a categorical or binary term scores ``+1`` at the party's
preferred level and ``-1`` at any other level; a term never named scores ``0``. With weights
summing to one the worst full contract has ``U = -1`` and the best ``U = +1``, so
``Ũ = (U + 1) / 2`` and an unnamed term adds ``w_k / 2`` to ``Ũ``. A name outside the schema
is kept in the ledger and never scored. A value of the wrong type or an unknown level scores as
unnamed and is counted as invalid; an out-of-range number is clipped and counted.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from negotiation.env._domain import Domain, Role, Term
from negotiation.env._scenario import PartyPrefs, Scenario

_FLOAT_MAX = sys.float_info.max
INVALID = object()  # sentinel: the value cannot be scored for this term


@dataclass(frozen=True)
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


def score_prefs(domain: Domain, prefs: PartyPrefs, ledger: Mapping[str, Any]) -> Score:
    """Score ``ledger`` (term name -> value) for the party with ``prefs`` in ``domain``."""
    u = dist = integ = 0.0
    n_invalid = n_oor = 0
    weights, preferred, role = prefs.weights, prefs.preferred, prefs.role
    for term in domain.terms:
        name = term.name
        w = weights[name]
        phi = 0.0
        if name in ledger:
            phi, invalid, oor = feature(term, role, preferred.get(name), ledger[name])
            n_invalid += invalid
            n_oor += oor
        u += w * phi
        part = w * (phi + 1.0) / 2.0
        if term.is_continuous:
            dist += part
        else:
            integ += part
    index = domain.term_index
    n_off = sum(1 for name in ledger if name not in index)
    # Ũ = (U + 1) / 2 mathematically; summing the non-negative per-term parts instead keeps it
    # inside [0, 1] under rounding ((U + 1) / 2 gave -1.1e-16 for a worst contract) and makes
    # the distributive/integrative split add up exactly. Weights may sum to 1 + 1e-16: clip.
    return Score(u, min(1.0, dist + integ), dist, integ, n_off, n_invalid, n_oor)


def score_ledger(scenario: Scenario, role: Role, ledger: Mapping[str, Any]) -> Score:
    """Score ``ledger`` for ``role`` in ``scenario``."""
    return score_prefs(scenario.domain, scenario.prefs(role), ledger)
