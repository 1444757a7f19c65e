"""``imitation_action``: a seller message as the policy's action, the inverse of its rendering."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from negotiation.agents import Policy, PolicyArch, imitation_action, scripted_seller_turns, training_buyer
from negotiation.agents._policy_layout import MAX_SLOTS
from negotiation.agents._policy_net import N_TOKENS, feature_tensors, token_mask
from negotiation.agents._policy_features import view_features
from negotiation.agents._policy_render import render_action
from negotiation.env import parse_message
from negotiation.study import load_study

PROTOCOL = load_study("demo").protocol
POLICY = Policy.init(PolicyArch(width=16), seed=0)


def _views():
    """Seller views of scripted episodes on every training domain (tables empty and not)."""
    out = []
    for d, domain in enumerate(PROTOCOL.domains.training):
        seed = PROTOCOL.seeds.training.start
        out += [v for v, _ in scripted_seller_turns(PROTOCOL, domain, seed, "scripted:linear",
                                                    training_buyer(PROTOCOL, d, seed, 0))]
    return out


VIEWS = _views()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(VIEWS) - 1), st.integers(0, 2**31 - 1))
@example(0, 788162892)  # a COUNTER naming no term on the opening's empty ledger
@example(26, 14407)  # a COUNTER whose only name flag is past the domain's 8 terms (found by CI)
def test_a_rendered_counter_reads_back_as_the_whole_table_it_proposes(index, seed):
    """The policy's own COUNTER, rendered, reads back with its named terms as it chose them and every
    other term of the ledger named at the ledger's value (the whole proposal); an ACCEPT as ACCEPT.
    A COUNTER that names none of the domain's terms is an empty COUNTER, whatever the ledger holds:
    the environment reads it as a bad parse, and so it has no action to read back."""
    view = VIEWS[index]
    sampled = POLICY.decide(view_features([view]), [(seed, view.turn)])[0]
    text = render_action(view, sampled, POLICY.bins)
    back = imitation_action(view, text, POLICY.bins)
    if sampled[0] == 0 and not sampled[1:1 + len(view.domain.terms)].any():  # name flags past the
        # domain's terms are sampled but never read (``token_mask``): they name nothing
        assert back is None and not parse_message(text).ok, text
        return
    assert back is not None, text
    if sampled[0] == 1:
        assert back[0] == 1 and not back[1:].any()
        return
    fb = feature_tensors(view_features([view]))
    decided = token_mask(fb, torch.from_numpy(sampled[None])).numpy()[0]
    values = decided.copy()
    values[:1 + MAX_SLOTS] = False  # the value and level tokens the sampled action decided
    assert np.array_equal(back[values], sampled[values]), (text, back, sampled)
    assert not back[~token_mask(fb, torch.from_numpy(back[None])).numpy()[0]].any()  # undecided tokens are 0
    slots = [t.name for t in view.domain.terms]
    named = {slots[i] for i in range(len(slots)) if back[1 + i] == 1}
    assert named == {slots[i] for i in range(len(slots)) if sampled[1 + i] == 1} | set(view.ledger)


def test_every_scripted_seller_turn_of_the_corpus_has_an_action():
    for view, text in scripted_seller_turns(PROTOCOL, PROTOCOL.domains.training[0], PROTOCOL.seeds.training.start,
                                            "scripted:boulware", training_buyer(PROTOCOL, 0, PROTOCOL.seeds.training.start, 0)):
        action = imitation_action(view, text, POLICY.bins)
        assert action is not None and action.shape == (N_TOKENS,), text


@pytest.mark.parametrize("text", ["no json here", '{"action": "COUNTER", "terms": {"no_such_term": 1}}'])
def test_a_turn_the_policy_cannot_say_has_no_action(text):
    view = next(v for v in VIEWS if v.ledger)
    assert imitation_action(view, text, POLICY.bins) is None


def test_accepting_an_empty_table_has_no_action():
    empty = next(v for v in VIEWS if not v.ledger)
    assert imitation_action(empty, '{"action": "ACCEPT"}', POLICY.bins) is None
    table = next(v for v in VIEWS if v.ledger)
    assert imitation_action(table, '{"action": "ACCEPT"}', POLICY.bins)[0] == 1
