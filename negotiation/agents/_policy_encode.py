"""A seller message as the demo policy's action (the imitation target of its warm start).

Each scripted seller turn becomes a row of the categorical decisions the policy samples
(``N_TOKENS``: accept, a name flag per slot, a value bin per slot, a level per slot). A COUNTER
becomes the whole table it proposes: the ledger with the message's terms written over it. A
scripted seller names only the terms that differ from the ledger, but its offer is the whole
contract, and the policy samples each name flag on its own: imitating the few names of late turns
taught small widths to name none at all, an empty COUNTER (a bad parse: 5.5 % of w16's seller
turns, 1 % of the others'). Restating an unchanged term changes nothing but a continuous value's
bin. A continuous value becomes the bin nearest its own φ (``FeaturePlan.lookup``), a level its
index. A turn the policy cannot say (unparsable, an unknown term or an invalid value) has no action.
"""

from __future__ import annotations

import numpy as np

from negotiation.agents._policy_layout import MAX_SLOTS
from negotiation.agents._policy_net import N_TOKENS
from negotiation.agents._policy_plan import plan_of
from negotiation.env import View, parse_message

__all__ = ["imitation_action"]


def imitation_action(view: View, text: str, bins: np.ndarray) -> np.ndarray | None:
    """The ``(N_TOKENS,)`` int64 action proposing what ``text`` proposes in ``view`` (``bins``: the
    policy's value bins in [-1, 1]), or ``None`` when the policy has no action for it."""
    parsed = parse_message(text)
    if not parsed.ok:
        return None
    action = np.zeros(N_TOKENS, dtype=np.int64)
    if parsed.action == "ACCEPT":
        action[0] = 1
        return action if view.ledger else None  # the policy cannot accept an empty table
    plan, slots = plan_of(view.domain, view.prefs), {t.name: i for i, t in enumerate(view.domain.terms)}
    if any(name not in slots for name, _ in parsed.terms):
        return None
    table = {**dict(view.ledger), **dict(parsed.terms)}  # the whole proposal: see the module docstring
    for name, value in table.items():
        slot = slots[name]
        phi, valid, levels = plan.lookup(slot, value)
        if not valid or not (view.domain.terms[slot].is_continuous or levels):
            return None
        action[1 + slot] = 1
        if view.domain.terms[slot].is_continuous:
            action[1 + MAX_SLOTS + slot] = int(np.argmin(np.abs(bins - phi)))
        else:
            action[1 + 2 * MAX_SLOTS + slot] = levels[0]
    return action
