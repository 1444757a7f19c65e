"""The demo ``policy`` seller's text: a sampled structured action rendered as templated prose
plus the JSON action (torch-free, so a lockstep helper process renders without loading torch).

The action row is in token order (``N_TOKENS``: accept, one name flag per slot, one value bin per
slot, one level per slot); the prose draws come from the view's own sample seed and turn, so the
same action in the same view is the same text in any process.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from negotiation.agents._offers import term_value
from negotiation.agents._policy_layout import MAX_SLOTS
from negotiation.agents._prose import render_accept, render_counter, turn_rng
from negotiation.env import View

__all__ = ["render_action", "render_actions"]

_PROSE_SALT = 7002  # keep the policy's prose draws apart from other agents' (and from its samples)


def render_action(view: View, action: np.ndarray, bins: np.ndarray) -> str:
    """The text of one ``(N_TOKENS,)`` action in ``view``; ``bins`` are the value bins in [-1, 1]."""
    rng = turn_rng(view.sample_seed, view.turn, _PROSE_SALT)
    if action[0] == 1:
        return render_accept(rng)
    terms = []
    for i, term in enumerate(view.domain.terms):
        if action[1 + i] != 1:
            continue
        if term.is_continuous:
            value = term_value(term, view.role, float(bins[action[1 + MAX_SLOTS + i]]))
        else:
            value = (term.levels or ())[action[1 + 2 * MAX_SLOTS + i]]
        terms.append((term.name, value))
    return render_counter(view.domain, view.role, terms, rng, opening=view.turn <= 2)


def render_actions(views: Sequence[View], actions: np.ndarray, bins: np.ndarray) -> list[str]:
    """``render_action`` of each view with its row of ``actions`` (``(n, N_TOKENS)``)."""
    return [render_action(v, a, bins) for v, a in zip(views, actions)]
