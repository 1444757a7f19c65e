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
from typing import Any, Mapping, NamedTuple, Sequence

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
from negotiation.agents._policy_plan import FeaturePlan, Scored, plan_of
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


def _last_move(history: Sequence[Message], speaker_is_me: bool, me: str
               ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The ledgers before and after the last turn of one speaker (``None``: it has not spoken)."""
    for k in range(len(history) - 1, -1, -1):
        msg = history[k]
        if (msg.role == me) == speaker_is_me:
            return (history[k - 1].ledger_after if k > 0 else {}), msg.ledger_after
    return None


def _history_utilities(view: View, plan: FeaturePlan) -> tuple[float, float, float, float]:
    """Counterpart spoke; own Ũ after its first turn, after its previous turn, after my last."""
    me = view.role
    theirs = [m for m in view.history if m.role != me]
    mine = [m for m in view.history if m.role == me]

    def u(msgs: list[Message], k: int) -> float:
        needed = k + 1 if k >= 0 else -k
        if len(msgs) < needed:
            return 0.0
        return plan.scored(msgs[k].ledger_after).u_tilde

    return float(bool(theirs)), u(theirs, 0), u(theirs, -2), u(mine, -1)


_NOT_MOVED = np.zeros(MAX_SLOTS)


def _moved_terms(plan: FeaturePlan, move: tuple[Mapping[str, Any], Mapping[str, Any]] | None
                 ) -> tuple[list[float], Scored | None]:
    """Which slots a move changed on the ledger (``ledger_changes``) and the ledger after it:
    a changed term's value is the after-ledger's, so its φ and levels are that ledger's."""
    if move is None:
        return [0.0] * MAX_SLOTS, None
    changes = ledger_changes(*move)
    flags = [1.0 if name in changes else 0.0 for name in plan.names]
    return flags + [0.0] * (MAX_SLOTS - plan.n), plan.scored(move[1])


class _ViewRead(NamedTuple):
    """What one view adds to its plan's static rows."""

    now: Scored
    """The current ledger."""
    globals: tuple[float, ...]
    theirs: tuple[list[float], Scored | None]
    """The counterpart's last move (``_moved_terms``)."""
    mine: tuple[list[float], Scored | None]
    """My last move."""


def _view_read(view: View, plan: FeaturePlan) -> _ViewRead:
    ledger, n = view.ledger, plan.n
    now = plan.scored(ledger)
    theirs = _moved_terms(plan, _last_move(view.history, False, view.role))
    mine = _moved_terms(plan, _last_move(view.history, True, view.role))
    spoke, their_first, their_prev, my_last = _history_utilities(view, plan)
    glob = ((view.turn - 1) / max(1, view.max_turns - 1), now.u_tilde, float(not ledger), spoke,
            their_first, their_prev, my_last, now.n_named / n, n / MAX_SLOTS, float(view.turn <= 2))
    return _ViewRead(now, glob, theirs, mine)


def _move_columns(moves: list[tuple[list[float], Scored | None]]) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """``(n, MAX_SLOTS)`` moved flags and own φ of the moved values (0 elsewhere: ``where``,
    never ``flag * φ``, which would write -0.0), and per row the moved terms' levels."""
    flags = np.array([f for f, _ in moves]) > 0.5
    phis = np.where(flags, np.stack([_NOT_MOVED if s is None else s.phis for _, s in moves]), 0.0)
    hits = [[] if s is None else [h for h in s.level_hits if f[h // MAX_LEVELS]] for f, s in moves]
    return flags, phis, hits


def _set_levels(levels: np.ndarray, hits: list[list[int]], column: int) -> None:
    """``levels[k, slot, level, column] = 1`` at row ``k``'s flat level indexes."""
    flat = levels.reshape(len(levels), MAX_SLOTS * MAX_LEVELS, LEVEL_FEATURES)  # a view: contiguous
    rows = [k for k, row in enumerate(hits) for _ in row]
    if rows:
        flat[rows, [h for row in hits for h in row], column] = 1.0


def view_features(views: Sequence[View]) -> FeatureBatch:
    """Features of a batch of views (one row per view): the plans' static rows stacked, then
    each view's ledger, moved terms and global features in one write per column."""
    if not views:
        return _empty_batch()
    plans = [plan_of(v.domain, v.prefs) for v in views]
    reads = [_view_read(v, p) for v, p in zip(views, plans)]
    slots = np.stack([p.slots for p in plans])
    phis = np.stack([r.now.phis for r in reads])
    slots[:, :, 5], slots[:, :, 6] = [r.now.named for r in reads], phis
    # Own utility still open, w (1 - φ) / 2: elementwise float64, as the scalar formula rounds
    # (empty slots have w = 0 and φ = 0, so they stay 0).
    slots[:, :, 11] = np.stack([p.weights for p in plans]) * (1.0 - phis) / 2.0
    levels = np.stack([p.levels for p in plans])
    _set_levels(levels, [r.now.level_hits for r in reads], 1)
    their_flags, their_phis, their_levels = _move_columns([r.theirs for r in reads])
    my_flags, my_phis, _ = _move_columns([r.mine for r in reads])
    slots[:, :, 7], slots[:, :, 8] = their_flags, their_phis
    _set_levels(levels, their_levels, 2)
    slots[:, :, 9], slots[:, :, 10] = my_flags, my_phis
    level_mask = np.stack([p.level_mask for p in plans])
    glob = np.array([r.globals for r in reads], dtype=np.float32)
    slot_mask = slots[:, :, 0] > 0.5
    continuous = slots[:, :, 2] > 0.5
    accept_ok = glob[:, 2] < 0.5
    return FeatureBatch(slots, glob, levels, slot_mask, continuous, level_mask, accept_ok)


def _empty_batch() -> FeatureBatch:
    slots = np.zeros((0, MAX_SLOTS, SLOT_FEATURES), dtype=np.float32)
    glob = np.zeros((0, GLOBAL_FEATURES), dtype=np.float32)
    return FeatureBatch(slots, glob, np.zeros((0, MAX_SLOTS, MAX_LEVELS, LEVEL_FEATURES), dtype=np.float32),
                        np.zeros((0, MAX_SLOTS), dtype=bool), np.zeros((0, MAX_SLOTS), dtype=bool),
                        np.zeros((0, MAX_SLOTS, MAX_LEVELS), dtype=bool), np.zeros(0, dtype=bool))


def concat_features(batches: Sequence[FeatureBatch]) -> FeatureBatch:
    """Stack several batches row-wise (the trainer's update runs over all of a step's turns)."""
    fields = FeatureBatch.__dataclass_fields__
    return FeatureBatch(**{f: np.concatenate([getattr(b, f) for b in batches]) for f in fields})
