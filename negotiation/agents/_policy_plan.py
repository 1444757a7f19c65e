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

from typing import Any, Mapping, Sequence

import numpy as np

from negotiation.agents._policy_layout import LEVEL_FEATURES, MAX_LEVELS, MAX_SLOTS, SLOT_FEATURES, check_domain
from negotiation.env import INVALID, Domain, PartyPrefs, Role, Term, canonical_value, feature

_KINDS = ("continuous", "categorical", "binary")
_MAX_PLANS = 4096  # bounded caches: entries hold their keys' objects, so an id is never reused
_MAX_MEMO = 4096

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


class FeaturePlan:
    """The static features of one party's view of a domain, and memoized value lookups."""

    def __init__(self, domain: Domain, prefs: PartyPrefs):
        check_domain(domain)
        terms, n = domain.terms, len(domain.terms)
        self.domain, self.prefs = domain, prefs
        self.names: tuple[str, ...] = tuple(t.name for t in terms)
        self.weights = np.zeros(MAX_SLOTS)
        self.weights[:n] = [prefs.weights[t.name] for t in terms]
        self.slots = np.zeros((MAX_SLOTS, SLOT_FEATURES), dtype=np.float32)
        self.levels = np.zeros((MAX_SLOTS, MAX_LEVELS, LEVEL_FEATURES), dtype=np.float32)
        self.level_mask = np.zeros((MAX_SLOTS, MAX_LEVELS), dtype=bool)
        order = np.argsort(-self.weights[:n], kind="stable")
        self.slots[:n, 13] = np.argsort(order, kind="stable") / max(1, n - 1)
        for i, term in enumerate(terms):
            self._static_row(i, term)
        self._memos: Sequence[_TermMemo] = [_memo_of(t, prefs.role, prefs.preferred.get(t.name)) for t in terms]

    def _static_row(self, i: int, term: Term) -> None:
        row = self.slots[i]
        row[0], row[1] = 1.0, self.weights[i]
        row[2 + _KINDS.index(term.kind)] = 1.0
        row[12] = 0.0 if term.is_continuous else 1.0 / len(term.levels or (1,))
        if not term.is_continuous:
            preferred = self.prefs.preferred.get(term.name)
            for j, level in enumerate(term.levels or ()):
                self.levels[i, j] = (float(level == preferred), 0.0, 0.0, 1.0)
                self.level_mask[i, j] = True

    def lookup(self, slot: int, value: Any) -> Lookup:
        """Own φ, validity and matching levels of ``value`` for the term in ``slot``."""
        return self._memos[slot](value)

    def phis(self, ledger: Mapping[str, Any]) -> np.ndarray:
        """Own φ per slot of a ledger (unnamed, invalid and off-schema terms count 0)."""
        out = np.zeros(MAX_SLOTS)
        for i, name in enumerate(self.names):
            if name in ledger:
                out[i] = self._memos[i](ledger[name])[0]
        return out


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
