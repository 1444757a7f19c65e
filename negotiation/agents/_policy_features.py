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

from negotiation.env import (
    INVALID,
    Domain,
    Message,
    PartyPrefs,
    Term,
    View,
    canonical_value,
    feature,
    ledger_changes,
)

FEATURE_VERSION = 1
MAX_SLOTS = 10
MAX_LEVELS = 6
SLOT_FEATURES = 14
GLOBAL_FEATURES = 10
LEVEL_FEATURES = 4


_KINDS = ("continuous", "categorical", "binary")


class FeatureError(ValueError):
    """A domain does not fit the fixed feature layout (too many terms or levels)."""


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


def check_domain(domain: Domain) -> None:
    """Raise ``FeatureError`` when ``domain`` exceeds the slot or level capacity."""
    if len(domain.terms) > MAX_SLOTS:
        raise FeatureError(f"domain {domain.name!r}:terms: {len(domain.terms)} terms exceed "
                           f"the policy's {MAX_SLOTS} slots")
    for term in domain.terms:
        if term.levels is not None and len(term.levels) > MAX_LEVELS:
            raise FeatureError(f"domain {domain.name!r}:terms.{term.name}.levels: "
                               f"{len(term.levels)} levels exceed {MAX_LEVELS}")


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
