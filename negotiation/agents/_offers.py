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
from functools import lru_cache
from typing import Any, Mapping

from negotiation.env import Domain, Message, PartyPrefs, Role, Term


@lru_cache(maxsize=1024)
def _rounding_step(width: float) -> float:
    """Offers are rounded to a power of ten about a hundredth of the range's width."""
    return 10.0 ** (math.floor(math.log10(width)) - 2)


def term_value(term: Term, role: Role, phi: float) -> float:
    """The continuous value giving ``role`` the feature ``phi`` in [-1, 1], rounded."""
    lo, hi = term.range  # type: ignore[misc]
    signed = phi if term.high_preferred_by == role else -phi
    value = lo + (signed + 1.0) / 2.0 * (hi - lo)
    step = _rounding_step(hi - lo)
    value = round(round(value / step) * step, 6)
    return int(value) if float(value).is_integer() else value


def _phi_of(term: Term, role: Role, value: Any) -> float:
    """Own feature of a continuous value the counterpart asked for (-1 when none or invalid)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return -1.0
    lo, hi = term.range  # type: ignore[misc]
    phi = 2.0 * (min(max(value, lo), hi) - lo) / (hi - lo) - 1.0
    return phi if term.high_preferred_by == role else -phi


def counterpart_levels(history: tuple[Message, ...], role: Role) -> dict[str, Any]:
    """Levels the counterpart set on the ledger, latest first wins (its revealed wishes)."""
    levels: dict[str, Any] = {}
    before: Mapping[str, Any] = {}
    for msg in history:
        after = msg.ledger_after
        if msg.role != role:
            for name, value in after.items():
                if name not in before or before[name] != value:
                    levels[name] = value
        before = after
    return levels


def offer_at_target(domain: Domain, prefs: PartyPrefs, target: float,
                    asked: Mapping[str, Any]) -> dict[str, Any]:
    """A full contract with own ``Ũ`` as close to ``target`` from above as the concessions allow."""
    role = prefs.role
    offer: dict[str, Any] = {}
    for t in domain.terms:
        offer[t.name] = term_value(t, role, 1.0) if t.is_continuous else prefs.preferred[t.name]
    u = 1.0
    for t in sorted(domain.terms, key=lambda t: (prefs.weights[t.name], t.name)):
        w = prefs.weights[t.name]
        if u - target <= 1e-12:
            break
        if t.is_continuous:
            # Never concede past what the counterpart asked for: that would be a gift.
            phi_floor = _phi_of(t, role, asked.get(t.name))
            drop = min(w * (1.0 - phi_floor) / 2.0, u - target)  # Ũ moves by w Δφ / 2
            if w <= 0 or drop <= 0:
                continue
            phi = 1.0 - 2.0 * drop / w
            offer[t.name] = term_value(t, role, phi)
            u -= drop
        elif t.name in asked and asked[t.name] != prefs.preferred[t.name] and u - w >= target - 1e-12:
            offer[t.name] = asked[t.name]
            u -= w
    return offer


def changed_terms(offer: Mapping[str, Any], ledger: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Terms of ``offer`` the ledger does not already hold with the same value."""
    return [(k, v) for k, v in offer.items() if k not in ledger or ledger[k] != v]
