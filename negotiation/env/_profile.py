"""Fixed per-party preferences (the Genius model), for domains imported from Genius/NegMAS.

A drawn domain gives each seed's parties Dirichlet weights and a preferred level per term
(φ = ±1). A profiled domain instead declares both parties' preferences in its file, as a Genius
utility space does: ``U = Σ_k w_k e_k(v_k)`` with raw weights ``w_k`` and raw evaluations
``e_k`` (a number per categorical level; a line between the range ends for a continuous term).
The environment scores its min-max normalisation ``Ũ = (U − U_min) / (U_max − U_min)``, which is
``Σ_k w'_k e'_k`` with ``w'_k = w_k·span_k / Σ_j w_j·span_j`` and ``e'_k = (e_k − min_k) /
span_k``; ``normalised`` computes those once per party.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, model_validator


class Profile(BaseModel):
    """One party's preferences as a Genius utility space, numbers as in the source file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    weights: dict[str, float]
    """Raw weight of every term (>= 0, not all zero); need not sum to one."""
    evaluations: dict[str, dict[str, float]] = {}
    """Categorical terms: the raw evaluation of every level."""
    ends: dict[str, tuple[float, float]] = {}
    """Continuous terms: the raw evaluation at ``lo`` and at ``hi`` (linear in between)."""
    reservation: float | None = None
    """Raw utility of no agreement (Genius ``reservation``); recorded, not used by the engine."""
    discount: float | None = None
    """Genius discount factor per round in (0, 1]; recorded, not used by the engine."""

    @model_validator(mode="after")
    def _numbers(self) -> Profile:
        numbers = [*self.weights.values(), *(e for t in self.evaluations.values() for e in t.values()),
                   *(e for pair in self.ends.values() for e in pair)]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("weights and evaluations must be finite numbers")
        if any(w < 0 for w in self.weights.values()) or not any(w > 0 for w in self.weights.values()):
            raise ValueError(f"weights must be >= 0 and not all zero, got {self.weights!r}")
        if self.discount is not None and not 0 < self.discount <= 1:
            raise ValueError(f"discount must lie in (0, 1], got {self.discount!r}")
        return self

    def spans(self) -> dict[str, tuple[float, float]]:
        """``(min, max)`` raw evaluation per term."""
        out = {name: (min(table.values()), max(table.values())) for name, table in self.evaluations.items()}
        out.update({name: (min(pair), max(pair)) for name, pair in self.ends.items()})
        return out

    def raw_utility(self, contract: Mapping[str, Any], ranges: Mapping[str, tuple[float, float]]) -> float:
        """``Σ w_k e_k(v_k)`` of a full contract of canonical values (a reference for tests)."""
        total = 0.0
        for name, w in self.weights.items():
            value = contract[name]
            if name in self.ends:
                (lo, hi), (e_lo, e_hi) = ranges[name], self.ends[name]
                total += w * (e_lo + (e_hi - e_lo) * (min(max(value, lo), hi) - lo) / (hi - lo))
            else:
                total += w * self.evaluations[name][value]
        return total


def check_profile(profile: Profile, terms: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``profile`` covers exactly ``terms`` (name -> Term)."""
    if set(profile.weights) != set(terms):
        raise ValueError(f"weights must name every term {sorted(terms)}, got {sorted(profile.weights)}")
    for name, term in terms.items():
        if term.kind == "continuous":
            if name not in profile.ends or name in profile.evaluations:
                raise ValueError(f"continuous term {name!r} needs ends (and no evaluations)")
        elif term.kind == "categorical":
            table = profile.evaluations.get(name)
            if table is None or name in profile.ends or set(table) != set(term.levels or ()):
                raise ValueError(f"categorical term {name!r} needs an evaluation for each level "
                                 f"{list(term.levels or ())}, got {sorted(table or ())}")
        else:
            raise ValueError(f"a profiled domain takes continuous and categorical terms, "
                             f"{name!r} is {term.kind}")
    extra = (set(profile.evaluations) | set(profile.ends)) - set(terms)
    if extra:
        raise ValueError(f"evaluations or ends name no term: {sorted(extra)}")
    spans = profile.spans()
    if not any(profile.weights[n] * (hi - lo) > 0 for n, (lo, hi) in spans.items()):
        raise ValueError("the utility is the same for every contract (no weighted term varies)")


def normalised(profile: Profile) -> tuple[dict[str, float], dict[str, Any]]:
    """``(w', e')``: weights summing to one and per term evaluations in [0, 1] (a level table,
    or the pair at ``lo``/``hi``), so ``Σ w'_k e'_k`` is the min-max normalised utility."""
    spans = profile.spans()
    total = sum(profile.weights[n] * (hi - lo) for n, (lo, hi) in spans.items())
    weights, evals = {}, {}
    for name, w in profile.weights.items():
        lo, hi = spans[name]
        width = hi - lo
        weights[name] = w * width / total

        def scale(e: float, lo: float = lo, width: float = width) -> float:
            return (e - lo) / width if width > 0 else 0.5

        if name in profile.ends:
            evals[name] = tuple(scale(e) for e in profile.ends[name])
        else:
            evals[name] = {level: scale(e) for level, e in profile.evaluations[name].items()}
    return weights, evals
