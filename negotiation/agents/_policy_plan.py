"""What the policy's features need of one (domain, own preferences) pair, built once.

A demo training run computes features for ~27k views, each reading every term's own φ of up
to four ledgers and its canonical value (~1M calls of ``negotiation.env.feature`` and
``canonical_value`` before this plan). Most of a view's numbers do not depend on the view at
all (weights, kinds, weight ranks, level counts, preferred levels), and the rest are
functions of a term's value, which repeats across turns, episodes of a group and scenarios.

So a ``FeaturePlan`` holds the static rows once per pair, and ``lookup`` memoizes, per (term,
role, preferred level), the one definition's answer for a value: ``feature`` (φ),
``canonical_value`` (valid or not) and which levels the canonical value is. The memo key is
``(type(value), value)``: the type keeps ``True``, ``1`` and ``1.0`` apart (they are equal
and hash alike, but score differently); the only equal values of one type that are distinct
objects are ``0.0`` and ``-0.0``, whose φ agree (``2 (0 - lo) / (hi - lo) - 1`` is the same
float for either zero). Unhashable values (a list from a model's JSON) are computed each time.
``tests/agents/test_policy_features_fast.py`` checks every feature against the plain
one-call-per-use reference.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from negotiation.agents._policy_layout import LEVEL_FEATURES, MAX_LEVELS, MAX_SLOTS, SLOT_FEATURES, check_domain
from negotiation.env import INVALID, Domain, PartyPrefs, Role, Term, canonical_value, feature

_KINDS = ("continuous", "categorical", "binary")
_MAX_PLANS = 4096  # bounded caches: entries hold their keys' objects, so an id is never reused
_MAX_MEMO = 4096
_MAX_LEDGERS = 256  # per plan: an episode has at most max_turns ledgers

Lookup = tuple[float, bool, tuple[int, ...]]
"""Own φ of a value, whether it is a valid value of the term, the level indexes it is."""


def _same(level: Any, value: Any) -> bool:
    # bool is an int subclass: True must not match a level 1, nor a string "True" match True.
    return value is not INVALID and type(level) is type(value) and level == value


def _evaluate(term: Term, role: Role, preferred: Any, value: Any) -> Lookup:
    canon = canonical_value(term, value)
    matches = () if term.is_continuous else tuple(
        j for j, level in enumerate(term.levels or ()) if _same(level, canon))
    return feature(term, role, preferred, value)[0], canon is not INVALID, matches


class _TermMemo:
    """``_evaluate`` of one term for one role and preferred level, memoized by value."""

    __slots__ = ("term", "role", "preferred", "values")

    def __init__(self, term: Term, role: Role, preferred: Any):
        self.term, self.role, self.preferred = term, role, preferred
        self.values: dict[tuple[type, Any], Lookup] = {}

    def __call__(self, value: Any) -> Lookup:
        key = (value.__class__, value)
        try:
            hit = self.values.get(key)
        except TypeError:  # unhashable: no memo
            return _evaluate(self.term, self.role, self.preferred, value)
        if hit is None:
            hit = _evaluate(self.term, self.role, self.preferred, value)
            if len(self.values) < _MAX_MEMO:
                self.values[key] = hit
        return hit


_MEMOS: dict[tuple[int, Role, type, Any], _TermMemo] = {}


def _memo_of(term: Term, role: Role, preferred: Any) -> _TermMemo:
    key = (id(term), role, preferred.__class__, preferred)
    memo = _MEMOS.get(key)
    if memo is None or memo.term is not term:
        if len(_MEMOS) >= _MAX_PLANS:
            _MEMOS.clear()
        memo = _MEMOS[key] = _TermMemo(term, role, preferred)
    return memo


class _DomainLayout:
    """What the static features take from the domain alone: kinds, level counts, level masks."""

    def __init__(self, domain: Domain):
        check_domain(domain)
        self.domain = domain
        self.slots = np.zeros((MAX_SLOTS, SLOT_FEATURES), dtype=np.float32)
        self.levels = np.zeros((MAX_SLOTS, MAX_LEVELS, LEVEL_FEATURES), dtype=np.float32)
        self.level_mask = np.zeros((MAX_SLOTS, MAX_LEVELS), dtype=bool)
        for i, term in enumerate(domain.terms):
            row = self.slots[i]
            row[0] = 1.0
            row[2 + _KINDS.index(term.kind)] = 1.0
            row[12] = 0.0 if term.is_continuous else 1.0 / len(term.levels or (1,))
            if not term.is_continuous:
                k = len(term.levels or ())
                self.levels[i, :k, 3] = 1.0
                self.level_mask[i, :k] = True


_LAYOUTS: dict[int, _DomainLayout] = {}


def _layout_of(domain: Domain) -> _DomainLayout:
    layout = _LAYOUTS.get(id(domain))
    if layout is None or layout.domain is not domain:
        if len(_LAYOUTS) >= _MAX_PLANS:
            _LAYOUTS.clear()
        layout = _LAYOUTS[id(domain)] = _DomainLayout(domain)
    return layout


class Scored(NamedTuple):
    """One ledger read through the plan: what the features take from it."""

    phis: np.ndarray
    """``(MAX_SLOTS,)`` own φ per slot (unnamed, invalid and off-schema terms count 0)."""
    u_tilde: float
    """Own Ũ of the ledger: ``(w . φ + 1) / 2``."""
    named: list[float]
    """``MAX_SLOTS`` flags: the term is on the ledger with a valid value."""
    n_named: int
    """Schema terms on the ledger, valid or not."""
    level_hits: list[int]
    """The levels the ledger holds, as flat indexes ``slot * MAX_LEVELS + level``."""


class FeaturePlan:
    """The static features of one party's view of a domain, and memoized value lookups."""

    def __init__(self, domain: Domain, prefs: PartyPrefs):
        layout = _layout_of(domain)
        terms, n = domain.terms, len(domain.terms)
        self.domain, self.prefs, self.n = domain, prefs, n
        self.names: tuple[str, ...] = tuple(t.name for t in terms)
        self.weights = np.zeros(MAX_SLOTS)
        self.weights[:n] = [prefs.weights[t.name] for t in terms]
        self.slots = layout.slots.copy()
        self.slots[:n, 1] = self.weights[:n]
        order = np.argsort(-self.weights[:n], kind="stable")
        self.slots[:n, 13] = np.argsort(order, kind="stable") / max(1, n - 1)
        self.levels, self.level_mask = layout.levels.copy(), layout.level_mask
        for i, term in enumerate(terms):
            preferred = prefs.preferred.get(term.name)
            for j, level in enumerate(() if term.is_continuous else term.levels or ()):
                if level == preferred:
                    self.levels[i, j, 0] = 1.0
        self._memos: Sequence[_TermMemo] = [_memo_of(t, prefs.role, prefs.preferred.get(t.name)) for t in terms]
        self._scored: dict[int, tuple[Mapping[str, Any], Scored]] = {}

    def lookup(self, slot: int, value: Any) -> Lookup:
        """Own φ, validity and matching levels of ``value`` for the term in ``slot``."""
        return self._memos[slot](value)

    def scored(self, ledger: Mapping[str, Any]) -> Scored:
        """``ledger`` read through the plan. A read-only ledger (``MappingProxyType``: the
        engine's snapshot of a turn, which later views see again in their history) is read once
        per plan and remembered by identity, holding it so its id is never reused."""
        if type(ledger) is not MappingProxyType:
            return self._score(ledger)
        hit = self._scored.get(id(ledger))
        if hit is not None and hit[0] is ledger:
            return hit[1]
        if len(self._scored) >= _MAX_LEDGERS:
            self._scored.clear()
        scored = self._score(ledger)
        self._scored[id(ledger)] = (ledger, scored)
        return scored

    def _score(self, ledger: Mapping[str, Any]) -> Scored:
        phis, named = [0.0] * MAX_SLOTS, [0.0] * MAX_SLOTS
        n_named, level_hits = 0, []
        for i, name in enumerate(self.names):
            if name in ledger:
                n_named += 1
                phi, valid, matches = self._memos[i](ledger[name])
                phis[i], named[i] = phi, float(valid)
                for j in matches:  # a loop, not a comprehension: that is a call per term on 3.11
                    level_hits.append(i * MAX_LEVELS + j)
        phi_array = np.array(phis)
        u = float(np.dot(self.weights, phi_array) + 1.0) / 2.0
        return Scored(phi_array, u, named, n_named, level_hits)


_PLANS: dict[tuple[int, int], FeaturePlan] = {}


def plan_of(domain: Domain, prefs: PartyPrefs) -> FeaturePlan:
    """The plan of a (domain, preferences) pair, keyed by identity (both are frozen)."""
    key = (id(domain), id(prefs))
    plan = _PLANS.get(key)
    if plan is None or plan.domain is not domain or plan.prefs is not prefs:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[key] = FeaturePlan(domain, prefs)
    return plan
