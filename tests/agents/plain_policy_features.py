"""The policy's features as first written, one ``feature`` call per use: the plain reference
that ``negotiation.agents._policy_features`` (per-(domain, preferences) plans and memoized
``feature`` calls) must match bit for bit (tests/agents/test_policy_features_fast.py)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from negotiation.agents._policy_features import (
    GLOBAL_FEATURES, LEVEL_FEATURES, MAX_LEVELS, MAX_SLOTS, SLOT_FEATURES, FeatureBatch, check_domain,
)
from negotiation.env import INVALID, Message, PartyPrefs, Term, View, canonical_value, feature, ledger_changes

_KINDS = ("continuous", "categorical", "binary")


def _phis(terms: Sequence[Term], prefs: PartyPrefs, ledger: Mapping[str, Any]) -> np.ndarray:
    """Own φ per slot of a ledger (unnamed, invalid and off-schema terms count 0)."""
    out = np.zeros(MAX_SLOTS)
    for i, term in enumerate(terms):
        if term.name in ledger:
            out[i] = feature(term, prefs.role, prefs.preferred.get(term.name), ledger[term.name])[0]
    return out


def _moved(history: Sequence[Message], speaker_is_me: bool, me: str) -> dict[str, Any]:
    """Terms the last turn of one speaker changed on the ledger, with their values."""
    for k in range(len(history) - 1, -1, -1):
        msg = history[k]
        if (msg.role == me) == speaker_is_me:
            before = history[k - 1].ledger_after if k > 0 else {}
            return ledger_changes(before, msg.ledger_after)
    return {}


def _u_tilde(weights: np.ndarray, phis: np.ndarray) -> float:
    return float(np.dot(weights, phis) + 1.0) / 2.0


def _history_utilities(view: View, weights: np.ndarray) -> tuple[float, float, float, float]:
    """Counterpart spoke; own Ũ after its first turn, after its previous turn, after my last."""
    terms, prefs, me = view.domain.terms, view.prefs, view.role
    theirs = [m for m in view.history if m.role != me]
    mine = [m for m in view.history if m.role == me]

    def u(msgs: list[Message], k: int) -> float:
        needed = k + 1 if k >= 0 else -k
        if len(msgs) < needed:
            return 0.0
        return _u_tilde(weights, _phis(terms, prefs, msgs[k].ledger_after))

    return float(bool(theirs)), u(theirs, 0), u(theirs, -2), u(mine, -1)


def _slot_row(row: np.ndarray, term: Term, weight: float, prefs: PartyPrefs, phi_ledger: float,
              named: bool, theirs: Mapping[str, Any], mine: Mapping[str, Any]) -> None:
    role, pref = prefs.role, prefs.preferred.get(term.name)
    row[0], row[1] = 1.0, weight
    row[2 + _KINDS.index(term.kind)] = 1.0
    row[5], row[6] = float(named), phi_ledger
    if term.name in theirs:
        row[7], row[8] = 1.0, feature(term, role, pref, theirs[term.name])[0]
    if term.name in mine:
        row[9], row[10] = 1.0, feature(term, role, pref, mine[term.name])[0]
    row[11] = weight * (1.0 - phi_ledger) / 2.0
    row[12] = 0.0 if term.is_continuous else 1.0 / len(term.levels or (1,))


def _view_features(view: View, out_slot: np.ndarray, out_glob: np.ndarray,
                   out_level: np.ndarray, out_level_mask: np.ndarray) -> None:
    domain, prefs, me, ledger = view.domain, view.prefs, view.role, view.ledger
    check_domain(domain)
    terms, n = domain.terms, len(domain.terms)
    weights = np.zeros(MAX_SLOTS)
    weights[:n] = [prefs.weights[t.name] for t in terms]
    phi_ledger = _phis(terms, prefs, ledger)
    theirs, mine = _moved(view.history, False, me), _moved(view.history, True, me)
    order = np.argsort(-weights[:n], kind="stable")
    out_slot[:n, 13] = np.argsort(order, kind="stable") / max(1, n - 1)
    n_named = 0
    for i, term in enumerate(terms):
        named = term.name in ledger and canonical_value(term, ledger[term.name]) is not INVALID
        n_named += term.name in ledger
        _slot_row(out_slot[i], term, weights[i], prefs, phi_ledger[i], named, theirs, mine)
        if not term.is_continuous:
            _level_features(term.levels or (), prefs.preferred.get(term.name),
                            _canon(term, ledger, term.name), _canon(term, theirs, term.name),
                            out_level[i], out_level_mask[i])
    spoke, their_first, their_prev, my_last = _history_utilities(view, weights)
    out_glob[:] = ((view.turn - 1) / max(1, view.max_turns - 1), _u_tilde(weights, phi_ledger),
                   float(not ledger), spoke, their_first, their_prev, my_last, n_named / n,
                   n / MAX_SLOTS, float(view.turn <= 2))


def _level_features(levels: Sequence[Any], preferred: Any, ledger_value: Any, their_value: Any,
                    out: np.ndarray, out_mask: np.ndarray) -> None:
    for j, level in enumerate(levels):
        out[j] = (float(level == preferred), float(_same(level, ledger_value)),
                  float(_same(level, their_value)), 1.0)
        out_mask[j] = True


def _canon(term: Any, values: Mapping[str, Any], name: str) -> Any:
    return canonical_value(term, values[name]) if name in values else INVALID


def _same(level: Any, value: Any) -> bool:
    # bool is an int subclass: True must not match a level 1, nor a string "True" match True.
    return value is not INVALID and type(level) is type(value) and level == value


def plain_view_features(views: Sequence[View]) -> FeatureBatch:
    """Features of a batch of views (one row per view)."""
    n = len(views)
    slots = np.zeros((n, MAX_SLOTS, SLOT_FEATURES), dtype=np.float32)
    glob = np.zeros((n, GLOBAL_FEATURES), dtype=np.float32)
    levels = np.zeros((n, MAX_SLOTS, MAX_LEVELS, LEVEL_FEATURES), dtype=np.float32)
    level_mask = np.zeros((n, MAX_SLOTS, MAX_LEVELS), dtype=bool)
    for k, view in enumerate(views):
        _view_features(view, slots[k], glob[k], levels[k], level_mask[k])
    slot_mask = slots[:, :, 0] > 0.5
    continuous = slots[:, :, 2] > 0.5
    accept_ok = glob[:, 2] < 0.5
    return FeatureBatch(slots, glob, levels, slot_mask, continuous, level_mask, accept_ok)
