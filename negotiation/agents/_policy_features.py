"""Features of the demo ``policy`` seller: numbers computed from the party's own view only.

The network never sees the counterpart's weights or preferred levels: every feature below is
a function of ``View`` (own weights, term kinds, own preferred levels, the ledger, the history
of ledgers, the turn number). Terms are indexed by slot in domain order (domains have at most
``MAX_SLOTS`` terms); empty slots are zero and masked.

Feature version 1
-----------------
Per slot (``SLOT_FEATURES``): exists, own weight, kind one-hot (continuous, categorical,
binary), named on the ledger, own φ of the ledger value, counterpart set it in its last turn,
own φ of that value, I set it in my last turn, own φ of that value, own utility still open on
the term ``w (1 - φ_ledger) / 2``, ``1 / n_levels`` (0 for continuous), rank of the weight
(0 = most important, 1 = least).

Global (``GLOBAL_FEATURES``): turn progress ``(turn - 1) / (max_turns - 1)``, own Ũ of the
ledger, ledger empty, counterpart has spoken, own Ũ after the counterpart's first turn, after its
previous turn, after my last turn, fraction of terms named, ``n_terms / MAX_SLOTS``, first turn.

Per level of an integrative slot (``LEVEL_FEATURES``): is my preferred level, is the ledger
value, is the value the counterpart set in its last turn, constant 1. The level head scores
levels through these, so it never depends on a level's position in the schema.

φ is the feature map of ``negotiation.env.feature`` (own sign); an invalid or unnamed value
counts 0, exactly as the scorer counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from negotiation.agents._policy_layout import (
    FEATURE_VERSION,
    GLOBAL_FEATURES,
    LEVEL_FEATURES,
    MAX_LEVELS,
    MAX_SLOTS,
    SLOT_FEATURES,
    FeatureError,
    check_domain,
)
from negotiation.agents._policy_plan import FeaturePlan, plan_of
from negotiation.env import Message, View, ledger_changes

__all__ = ["FEATURE_VERSION", "GLOBAL_FEATURES", "LEVEL_FEATURES", "MAX_LEVELS", "MAX_SLOTS", "SLOT_FEATURES",
           "FeatureBatch", "FeatureError", "check_domain", "concat_features", "view_features"]


@dataclass(frozen=True)
class FeatureBatch:
    """Features of ``n`` views, as float32 arrays ready for ``torch.from_numpy``."""

    slots: np.ndarray
    """``(n, MAX_SLOTS, SLOT_FEATURES)`` per-term features."""
    globals: np.ndarray
    """``(n, GLOBAL_FEATURES)`` per-view features."""
    levels: np.ndarray
    """``(n, MAX_SLOTS, MAX_LEVELS, LEVEL_FEATURES)`` per-level features."""
    slot_mask: np.ndarray
    """``(n, MAX_SLOTS)`` bool: the slot holds a term."""
    continuous: np.ndarray
    """``(n, MAX_SLOTS)`` bool: the slot holds a continuous term."""
    level_mask: np.ndarray
    """``(n, MAX_SLOTS, MAX_LEVELS)`` bool: the level exists (integrative slots only)."""
    accept_ok: np.ndarray
    """``(n,)`` bool: ACCEPT is a valid move (the ledger is not empty)."""


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


def _history_utilities(view: View, plan: FeaturePlan) -> tuple[float, float, float, float]:
    """Counterpart spoke; own Ũ after its first turn, after its previous turn, after my last."""
    me = view.role
    theirs = [m for m in view.history if m.role != me]
    mine = [m for m in view.history if m.role == me]

    def u(msgs: list[Message], k: int) -> float:
        needed = k + 1 if k >= 0 else -k
        if len(msgs) < needed:
            return 0.0
        return _u_tilde(plan.weights, plan.phis(msgs[k].ledger_after))

    return float(bool(theirs)), u(theirs, 0), u(theirs, -2), u(mine, -1)


def _moved_columns(plan: FeaturePlan, moved: Mapping[str, Any], out_slot: np.ndarray, flag: int) -> None:
    """Columns ``flag`` (the term moved) and ``flag + 1`` (own φ of its new value)."""
    for i, name in enumerate(plan.names):
        if name in moved:
            out_slot[i, flag], out_slot[i, flag + 1] = 1.0, plan.lookup(i, moved[name])[0]


def _view_features(view: View, out_slot: np.ndarray, out_glob: np.ndarray,
                   out_level: np.ndarray, out_level_mask: np.ndarray) -> None:
    plan, ledger = plan_of(view.domain, view.prefs), view.ledger
    n = len(plan.names)
    out_slot[:] = plan.slots
    out_level[:] = plan.levels
    out_level_mask[:] = plan.level_mask
    phi_ledger = np.zeros(MAX_SLOTS)
    named, n_named = [0.0] * n, 0
    for i, name in enumerate(plan.names):
        if name in ledger:
            n_named += 1
            phi, valid, matches = plan.lookup(i, ledger[name])
            phi_ledger[i], named[i] = phi, float(valid)
            for j in matches:
                out_level[i, j, 1] = 1.0
    out_slot[:n, 5], out_slot[:n, 6] = named, phi_ledger[:n]
    theirs, mine = _moved(view.history, False, view.role), _moved(view.history, True, view.role)
    _moved_columns(plan, theirs, out_slot, 7)
    _moved_columns(plan, mine, out_slot, 9)
    for i, name in enumerate(plan.names):
        if name in theirs:
            for j in plan.lookup(i, theirs[name])[2]:
                out_level[i, j, 2] = 1.0
    out_slot[:n, 11] = plan.weights[:n] * (1.0 - phi_ledger[:n]) / 2.0
    spoke, their_first, their_prev, my_last = _history_utilities(view, plan)
    out_glob[:] = ((view.turn - 1) / max(1, view.max_turns - 1), _u_tilde(plan.weights, phi_ledger),
                   float(not ledger), spoke, their_first, their_prev, my_last, n_named / n,
                   n / MAX_SLOTS, float(view.turn <= 2))


def view_features(views: Sequence[View]) -> FeatureBatch:
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


def concat_features(batches: Sequence[FeatureBatch]) -> FeatureBatch:
    """Stack several batches row-wise (the trainer's update runs over all of a step's turns)."""
    fields = FeatureBatch.__dataclass_fields__
    return FeatureBatch(**{f: np.concatenate([getattr(b, f) for b in batches]) for f in fields})
