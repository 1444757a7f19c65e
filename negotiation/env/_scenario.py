"""Scenarios: a domain and a seed, from which both parties' private preferences follow.

Draw order (documented because seeds are part of the study's record): the seed alone seeds
``numpy.random.SeedSequence(seed)``, which spawns two child streams, seller first and buyer
second, each a ``PCG64`` generator. Each party draws its importances
``w ~ Dirichlet(alpha * 1_K)`` over the domain's terms in file order, then, for every
integrative term in file order, its preferred level uniformly among the term's levels.
Nothing else (arm, buyer, process) enters the draw, so every arm meets identical scenarios.
A profiled domain (``Domain.profiles``) draws nothing: every seed gets its declared preferences.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from negotiation.env._domain import Domain, Role, Term
from negotiation.env._profile import normalised

DEFAULT_DIRICHLET_ALPHA = 0.3  # paper §3; protocols restate it and pass it explicitly


@dataclass(frozen=True)
class PartyPrefs:
    """One party's private preferences."""

    role: Role
    weights: Mapping[str, float]
    """Importance per term (domain order); sums to 1."""
    preferred: Mapping[str, Any]
    """Preferred level per integrative term (a profiled domain: the first best level)."""
    evaluations: Mapping[str, Any] | None = None
    """Profiled domains only: per term the normalised evaluation in [0, 1], a level table or the
    ``(lo, hi)`` pair of a continuous term; scoring then uses ``Σ w_k e_k``, not φ = ±1."""


@dataclass(frozen=True)
class Scenario:
    """A (domain, seed) pair with both parties' preferences."""

    domain: Domain
    seed: int
    seller: PartyPrefs
    buyer: PartyPrefs
    alpha: float = DEFAULT_DIRICHLET_ALPHA

    def prefs(self, role: Role) -> PartyPrefs:
        return self.seller if role == "seller" else self.buyer

    @property
    def key(self) -> tuple[str, int]:
        return (self.domain.name, self.seed)


def evaluation(prefs: PartyPrefs, term: Term, value: Any) -> float:
    """The party's own normalised valuation ``e`` in [0, 1] of ``term`` set to the canonical
    ``value``, so that a full contract's ``Ũ = Σ_k w_k e_k``. Planners (agents, prompts, the
    analysis) ask this, not φ or ``high_preferred_by``: a drawn party values its preferred level 1
    and any other 0, and a continuous term linearly towards the end its role prefers; a profiled
    party reads its declared evaluations (a continuous term: linear between its ends)."""
    table = prefs.evaluations[term.name] if prefs.evaluations is not None else None
    if term.is_continuous:
        lo, hi = term.range  # type: ignore[misc]
        share = (min(max(value, lo), hi) - lo) / (hi - lo)
        if table is not None:
            return table[0] + (table[1] - table[0]) * share
        return share if term.high_preferred_by == prefs.role else 1.0 - share
    if table is not None:
        return table[value]
    return 1.0 if value == prefs.preferred[term.name] else 0.0


def prefers_high(prefs: PartyPrefs, term: Term) -> bool:
    """Whether the party values a continuous term's high end above its low end (``evaluation``)."""
    lo, hi = term.range  # type: ignore[misc]
    return evaluation(prefs, term, hi) > evaluation(prefs, term, lo)


def _draw_party(domain: Domain, role: Role, rng: np.random.Generator, alpha: float) -> PartyPrefs:
    k = len(domain.terms)
    w = rng.dirichlet(np.full(k, alpha))
    weights = {t.name: float(x) for t, x in zip(domain.terms, w)}
    preferred = {}
    for term in domain.terms:
        if not term.is_continuous:
            levels = term.levels or ()
            preferred[term.name] = levels[int(rng.integers(len(levels)))]
    return PartyPrefs(role, MappingProxyType(weights), MappingProxyType(preferred))


def _profile_party(domain: Domain, role: Role) -> PartyPrefs:
    weights, evals = normalised(domain.profiles[role])  # type: ignore[index]
    preferred = {name: max(table, key=table.__getitem__) for name, table in evals.items()
                 if isinstance(table, dict)}
    ordered = {t.name: weights[t.name] for t in domain.terms}
    return PartyPrefs(role, MappingProxyType(ordered), MappingProxyType(preferred),
                      MappingProxyType({t.name: evals[t.name] for t in domain.terms}))


def make_scenario(domain: Domain, seed: int, alpha: float = DEFAULT_DIRICHLET_ALPHA) -> Scenario:
    """Both parties' preferences for ``(domain, seed)``, deterministic in the seed alone."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if domain.profiles is not None:
        seller, buyer = _profile_party(domain, "seller"), _profile_party(domain, "buyer")
        return Scenario(domain, int(seed), seller, buyer, alpha)
    seller_ss, buyer_ss = np.random.SeedSequence(int(seed)).spawn(2)
    seller = _draw_party(domain, "seller", np.random.Generator(np.random.PCG64(seller_ss)), alpha)
    buyer = _draw_party(domain, "buyer", np.random.Generator(np.random.PCG64(buyer_ss)), alpha)
    return Scenario(domain, int(seed), seller, buyer, alpha)
