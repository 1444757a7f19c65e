"""Offer construction for scripted agents: own-utility targets over full contracts.

A scripted agent knows only its own weights and preferred levels. Its offer at a target
``Ũ`` starts from its best full contract and concedes on the terms that matter least to it
first (cheap concessions are the ones worth most to trade): a continuous term moves to the
counterpart's end of the range, an integrative term switches to the level the counterpart
has asked for (learned from the ledger), and the last concession on a continuous term is
partial so the offer lands on the target.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Mapping

from negotiation.env import Domain, Message, PartyPrefs, Role, Term, evaluation, ledger_changes, prefers_high

_FLOAT_MAX = sys.float_info.max


@lru_cache(maxsize=1024)
def _rounding_step(width: float) -> float:
    """Offers are rounded to a power of ten about a hundredth of the range's width."""
    return 10.0 ** (math.floor(math.log10(width)) - 2)


def term_value(term: Term, role: Role, phi: float) -> float:
    """The continuous value giving ``role`` the feature ``phi`` in [-1, 1], rounded."""
    lo, hi = term.range  # type: ignore[misc]
    return _value_at(lo, hi, term.high_preferred_by == role, _rounding_step(hi - lo), phi)


def _value_at(lo: float, hi: float, prefers_high: bool, step: float, phi: float) -> float:
    signed = phi if prefers_high else -phi
    value = lo + (signed + 1.0) / 2.0 * (hi - lo)
    value = round(round(value / step) * step, 6)  # round(x, 6) of a float is a float
    return int(value) if value.is_integer() else value


def _phi_of(lo: float, hi: float, prefers_high: bool, value: Any) -> float:
    """Own feature of a continuous value the counterpart asked for (-1 when none or invalid)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return -1.0  # not a number, or an infinity, NaN or an int past float range (10**400)
    phi = 2.0 * (min(max(value, lo), hi) - lo) / (hi - lo) - 1.0
    return phi if prefers_high else -phi


# Each episode's levels so far, by (its first message, role): a view's history is the last one's
# plus the turns played since, so the scan resumes where it stopped instead of rereading every
# ledger of the episode each turn (which made a T-round episode quadratic in T). The entry
# holds the history it was computed from, so a first message's id is never reused while cached.
# The least recently used entry goes first: an entry keeps its whole episode alive, and a few
# thousand finished episodes kept alive made every full garbage collection scan them (a tenth of
# a scripted episode's time); 512 still covers the lockstep batches of training (128 episodes).
# An OrderedDict: dropping a plain dict's first key again and again rescans the dead slots before it.
_LEVELS: OrderedDict[tuple[int, str], tuple[tuple[Message, ...], dict[str, Any]]] = OrderedDict()
_MAX_LEVELS = 512


def counterpart_levels(history: tuple[Message, ...], role: Role) -> dict[str, Any]:
    """Levels the counterpart set on the ledger, latest first wins (its revealed wishes).

    Equal to ``_scan_levels(history, role, 0, {})``: a cached result for a prefix of
    ``history`` (equal message for message) is extended by the messages after it.
    """
    history = tuple(history)
    if not history:
        return {}
    key = (id(history[0]), role)
    hit = _LEVELS.get(key)
    start, levels = 0, {}
    if hit is not None:
        prefix, cached = hit
        if len(prefix) <= len(history) and history[:len(prefix)] == prefix:
            start, levels = len(prefix), cached  # extended in place: the entry is replaced below
    levels = _scan_levels(history, role, start, levels)
    _LEVELS[key] = (history, levels)
    _LEVELS.move_to_end(key)  # the order is the order of use
    if len(_LEVELS) > _MAX_LEVELS:
        _LEVELS.popitem(last=False)
    return dict(levels)


def _scan_levels(history: tuple[Message, ...], role: Role, start: int, levels: dict[str, Any]) -> dict[str, Any]:
    """``levels`` updated with what the counterpart changed on the ledger in ``history[start:]``."""
    before: Mapping[str, Any] = history[start - 1].ledger_after if start else {}
    for msg in history[start:]:
        after = msg.ledger_after
        if msg.role != role:
            levels.update(ledger_changes(before, after))
        before = after
    return levels


# A party's concession plan: its best full contract and, least important first, the terms it
# concedes (name, weight, continuous?, lo, hi, prefers high?, rounding step, preferred level,
# own evaluation of each level): both from the environment's ``evaluation``, not φ, so a profiled
# party plans with its declared preferences.
_Plan = tuple[dict[str, Any], tuple[tuple[str, float, bool, float, float, bool, float, Any, dict], ...]]
_PLANS: dict[tuple[int, int], tuple[Domain, PartyPrefs, _Plan]] = {}
_MAX_PLANS = 4096
# Offers made, by (id of the plan, target, asked items), with the types of the target and values.
# A plan id is unique while _PLANS holds the plan, and _OFFERS is cleared with _PLANS. Entries hold
# only atoms (no domain or preferences), so the collector untracks them and never rescans them.
_OFFERS: dict[tuple, tuple[tuple[type, ...], dict[str, Any]]] = {}
_MAX_OFFERS = 4096


def _concession_plan(domain: Domain, prefs: PartyPrefs) -> _Plan:
    """Built once per (domain, preferences): an agent offers every turn of every episode, and
    sorting the terms and reading pydantic attributes each time was most of an offer's cost.
    Keyed by identity (both are frozen); the entry holds them so an id is never reused."""
    key = (id(domain), id(prefs))
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is domain and hit[1] is prefs:
        return hit[2]
    best, steps = {}, []
    for t in sorted(domain.terms, key=lambda t: (prefs.weights[t.name], t.name)):
        lo, hi = t.range if t.is_continuous else (0.0, 1.0)  # type: ignore[misc]
        high = prefers_high(prefs, t) if t.is_continuous else False
        step = _rounding_step(hi - lo) if t.is_continuous else 0.0
        values = {} if t.is_continuous else {v: evaluation(prefs, t, v) for v in t.levels or ()}
        steps.append((t.name, prefs.weights[t.name], t.is_continuous, lo, hi, high, step,
                      prefs.preferred.get(t.name), values))
    for t in domain.terms:  # the best contract in domain order (the order offers are spoken in)
        best[t.name] = (_value_at(*t.range, prefers_high(prefs, t), _rounding_step(t.range[1] - t.range[0]), 1.0)
                        if t.is_continuous else prefs.preferred[t.name])
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
        _OFFERS.clear()  # keyed by plan ids, which are unique only while the plans are held
    plan = (best, tuple(steps))
    _PLANS[key] = (domain, prefs, plan)
    return plan


_OFFER_SCALARS = frozenset({str, int, bool, float})


def _memoizable(asked: Mapping[str, Any], types: tuple[type, ...]) -> bool:
    """Whether an offer built for ``asked`` may be stored: builtin scalars only, and no float
    zero (``-0.0 == 0.0`` as keys, but an offer may hold the asked value and JSON writes them
    apart). A later hit has equal values of the same types, so it holds no float zero either."""
    return _OFFER_SCALARS.issuperset(types) and (
        float not in types or not any(type(v) is float and v == 0.0 for v in asked.values()))


def offer_at_target(domain: Domain, prefs: PartyPrefs, target: float,
                    asked: Mapping[str, Any]) -> dict[str, Any]:
    """A full contract with own ``Ũ`` as close to ``target`` from above as the concessions allow.

    A pure function of its inputs, memoized: an agent meets the same target and asked levels
    at the same turn of every episode it plays in one scenario. Entries are matched on the
    types of the target and the values too (``True == 1 == 1.0`` as keys, not in an offer).
    """
    plan = _concession_plan(domain, prefs)
    key = (id(plan), target, tuple(asked.items()))
    try:
        hit = _OFFERS.get(key)
    except TypeError:  # an unhashable asked value: no memo
        return _build_offer(*plan, target, asked)
    types = (type(target), *map(type, asked.values()))
    if hit is not None and hit[0] == types:
        return dict(hit[1])
    offer = _build_offer(*plan, target, asked)
    if _memoizable(asked, types[1:]):
        if len(_OFFERS) >= _MAX_OFFERS:
            _OFFERS.clear()
        _OFFERS[key] = (types, offer)
        return dict(offer)
    return offer


def _build_offer(best: dict[str, Any], steps: tuple, target: float, asked: Mapping[str, Any]) -> dict[str, Any]:
    offer = dict(best)
    u = 1.0
    for name, w, continuous, lo, hi, high, step, preferred, values in steps:
        if u - target <= 1e-12:
            break
        if continuous:
            # Never concede past what the counterpart asked for: that would be a gift.
            phi_floor = _phi_of(lo, hi, high, asked.get(name))
            drop = min(w * (1.0 - phi_floor) / 2.0, u - target)  # Ũ moves by w Δφ / 2
            if w <= 0 or drop <= 0:
                continue
            phi = 1.0 - 2.0 * drop / w
            offer[name] = _value_at(lo, hi, high, step, phi)
            u -= drop
        else:
            level, cost = _level_concession(values, w, u, target, preferred, asked.get(name, _NONE))
            if level is not _NONE:
                offer[name] = level
                u -= cost
    return offer


_NONE = object()


def _level_concession(values: Mapping[Any, float], w: float, u: float, target: float, preferred: Any,
                      asked: Any) -> tuple[Any, float]:
    """``(level, cost)`` an integrative term moves to keeping own ``Ũ`` at ``target``, or ``_NONE``.

    The asked level when it fits (switching costs ``w (1 - e)``: all of ``w`` on a drawn
    domain); else the fitting level of lowest own value above the asked one's, a partial
    concession as on a continuous term. Only a profiled party has such levels (``0 < e < 1``).
    """
    if asked is not _NONE and asked != preferred:
        cost = w * (1.0 - _level_value(values, asked))
        if u - cost >= target - 1e-12:
            return asked, cost
    floor = _level_value(values, asked) if asked is not _NONE else 0.0
    best, best_e = _NONE, 1.0
    for level, e in values.items():
        if floor < e < best_e and u - w * (1.0 - e) >= target - 1e-12:
            best, best_e = level, e
    return (best, w * (1.0 - best_e)) if best is not _NONE else (_NONE, 0.0)


def _level_value(values: Mapping[Any, float], value: Any) -> float:
    """Own evaluation of an asked level; 0 for anything not spelled as a level (a conservative
    cost, and the drawn model's value of every level but the preferred one)."""
    return values.get(value, 0.0) if isinstance(value, (str, bool)) else 0.0


def changed_terms(offer: Mapping[str, Any], ledger: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Terms of ``offer`` the ledger does not already hold with the same value."""
    return list(ledger_changes(ledger, offer).items())
