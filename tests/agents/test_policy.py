"""The demo ``policy`` seller: sampling, rendering through the parser, log-probs, checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.agents import make_agent
from negotiation.agents._offers import term_value
from negotiation.agents._policy import Policy, PolicyAgent, _sample
from negotiation.agents._policy_features import MAX_SLOTS, view_features
from negotiation.agents._policy_net import (
    N_TOKENS,
    PolicyArch,
    feature_tensors,
    token_logprobs_entropy,
    token_mask,
)
from negotiation.env import EnvConfig, Negotiation, make_scenario, parse_message, run_episode
from negotiation.errors import ConfigError
from tests.agents.car_prefs import CAR, SCENARIO, said, view

ARCH = PolicyArch(width=16)
CFG = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9.0,
                accept_applies_terms=False)
HISTORY = (said(1, "seller", {"price": 60}), said(2, "buyer", {"price": 20, "interior": "Sport"}))
LEDGER = {"price": 20, "interior": "Sport"}


@pytest.fixture(scope="module")
def policy():
    return Policy.init(ARCH, seed=3)


@pytest.mark.parametrize("u, idx", [(0.0, 0), (0.1999, 0), (0.2, 1), (0.49, 1), (0.5, 2), (0.999, 2)])
def test_inverse_cdf_by_hand(u, idx):
    # Mass [.2, .3, .5]: choice 0 covers [0, .2), choice 1 [.2, .5), choice 2 [.5, 1).
    assert _sample(np.array([0.2, 0.3, 0.5]), np.array(u)) == idx


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0, 3.0]), min_size=2, max_size=7),
       st.floats(0.0, 1.0, exclude_max=True))
def test_inverse_cdf_never_draws_a_zero_probability_choice(weights, u):
    probs = np.array(weights)
    if probs.sum() == 0:
        probs[-1] = 1.0
    probs = probs / probs.sum()
    assert probs[_sample(probs, np.array(u))] > 0


def test_same_view_same_reply_and_seeds_differ(policy):
    v = view(turn=3, history=HISTORY, ledger=LEDGER, sample_seed=11)
    assert policy.act([v]).texts == policy.act([v, v]).texts[:1]
    texts = {policy.act([view(turn=3, history=HISTORY, ledger=LEDGER, sample_seed=s)]).texts[0]
             for s in range(8)}
    assert len(texts) > 4  # the untrained policy is close to uniform


def test_opening_never_accepts_and_every_reply_parses_as_sampled(policy):
    views = [view(turn=1, sample_seed=s) for s in range(40)]
    turns = policy.act(views)
    bins = np.linspace(-1, 1, ARCH.value_bins)
    for v, text, action in zip(views, turns.texts, turns.actions):
        assert action[0] == 0  # ACCEPT is masked on an empty ledger
        parsed = parse_message(text)
        named = [i for i in range(len(CAR.terms)) if action[1 + i] == 1]
        if not named:
            assert parsed.error == "empty_counter"
            continue
        assert parsed.ok and parsed.action == "COUNTER"
        expected = []
        for i in named:
            term = CAR.terms[i]
            value = (term_value(term, "seller", bins[action[1 + MAX_SLOTS + i]]) if term.is_continuous
                     else term.levels[action[1 + 2 * MAX_SLOTS + i]])
            expected.append((term.name, value))
        assert list(parsed.terms) == expected
        assert "{" not in parsed.prose


def test_token_mask_by_hand():
    fb = feature_tensors(view_features([view(turn=3, history=HISTORY, ledger=LEDGER)] * 2))
    actions = torch.zeros((2, N_TOKENS), dtype=torch.int64)
    actions[0, 0] = 1                      # row 0: ACCEPT -> only the accept token decided
    actions[1, 1 + 0] = 1                  # row 1: COUNTER naming price (continuous)
    actions[1, 1 + 2] = 1                  # ... and interior (categorical)
    mask = token_mask(fb, actions)
    assert mask[0].nonzero().flatten().tolist() == [0]
    # accept token, ten name tokens, the value token of slot 0, the level token of slot 2.
    assert mask[1].nonzero().flatten().tolist() == [0, *range(1, 11), 11 + 0, 21 + 2]


def test_token_logprobs_are_exact(policy):
    fb = feature_tensors(view_features([view(turn=3, history=HISTORY, ledger=LEDGER, sample_seed=4)]))
    turns = policy.act([view(turn=3, history=HISTORY, ledger=LEDGER, sample_seed=4)])
    actions = torch.from_numpy(turns.actions)
    with torch.no_grad():
        out = policy.net(fb)
        logp, ent = token_logprobs_entropy(out, actions)
    a = turns.actions[0]
    p_accept = torch.softmax(out["accept"][0], -1)[a[0]]
    assert float(logp[0, 0]) == pytest.approx(float(torch.log(p_accept)), abs=1e-6)
    p_level = torch.softmax(out["level"][0, 2], -1)
    assert float(logp[0, 21 + 2]) == pytest.approx(float(torch.log(p_level[a[21 + 2]])), abs=1e-6)
    # interior has 3 levels: the three padded ones get no mass, entropy <= log 3.
    assert float(p_level[3:].sum()) == 0.0 and float(ent[0, 21 + 2]) <= np.log(3) + 1e-6
    # An untrained policy is near uniform: the accept head's entropy is close to log 2.
    assert float(ent[0, 0]) == pytest.approx(np.log(2), abs=0.01)


def test_init_is_seeded_and_leaves_the_global_stream_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = Policy.init(ARCH, 5), Policy.init(ARCH, 5), Policy.init(ARCH, 6)
    assert torch.rand(1) == before
    sa, sb, sc = (p.net.state_dict() for p in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_checkpoint_round_trip_through_the_spec(policy, tmp_path):
    policy.save(tmp_path / "ck")
    assert json.loads((tmp_path / "ck" / "config.json").read_text())["width"] == 16
    agent = make_agent(f"policy:{tmp_path / 'ck'}", "seller")
    assert isinstance(agent, PolicyAgent)
    v = view(turn=3, history=HISTORY, ledger=LEDGER, sample_seed=9)
    assert agent.respond(v).text == policy.act([v]).texts[0]
    assert [r.text for r in agent.respond_many([v, v])] == [policy.act([v]).texts[0]] * 2


def test_checkpoint_errors_name_the_file(policy, tmp_path):
    with pytest.raises(ConfigError, match=r"config.json:<file>: policy checkpoint file not found"):
        Policy.load(tmp_path / "missing")
    policy.save(tmp_path / "ck")
    (tmp_path / "ck" / "config.json").write_text('{"width": 32, "version": 1}')
    with pytest.raises(ConfigError, match=r"weights.pt:<weights>: do not match config.json width=32"):
        Policy.load(tmp_path / "ck")
    (tmp_path / "ck" / "config.json").write_text('{"width": 0}')
    with pytest.raises(ConfigError, match=r"config.json:width: Input should be greater than or equal to 2"):
        Policy.load(tmp_path / "ck")


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", b"PK\x03\x04 truncated zip", b"\x80\x02}q\x00."])
def test_a_corrupt_weights_file_is_named_not_a_traceback(policy, tmp_path, content):
    """Regression: a corrupt weights.pt in `nego play` ended in a traceback."""
    policy.save(tmp_path / "ck")
    (tmp_path / "ck" / "weights.pt").write_bytes(content)
    with pytest.raises(ConfigError, match=r"weights.pt:"):
        Policy.load(tmp_path / "ck")


def test_reply_depends_on_the_sellers_view_only(policy):
    # Same seller preferences, a different buyer: the seller's view and reply are unchanged.
    other = make_scenario(CAR, 77)
    twin = SCENARIO.__class__(CAR, SCENARIO.seed, SCENARIO.seller, other.buyer)
    replies = [policy.act([Negotiation(s, CFG).view()]).texts[0] for s in (SCENARIO, twin)]
    assert replies[0] == replies[1]


def test_full_episode_against_a_scripted_buyer(policy):
    buyer = make_agent("scripted:boulware?e=0.5", "buyer")
    episode = run_episode(SCENARIO, PolicyAgent("policy:test", "seller", policy), buyer, CFG)
    assert episode.outcome in ("deal", "no_deal")
    seller_turns = [t for t in episode.turns if t.role == "seller"]
    assert all(t.ok or t.error == "empty_counter" for t in seller_turns)
    again = run_episode(SCENARIO, PolicyAgent("policy:test", "seller", policy), buyer, CFG)
    assert [t.raw for t in again.turns] == [t.raw for t in episode.turns]


@pytest.mark.parametrize("width", [1, 2, 4096, 4097])
def test_the_protocol_and_the_network_hold_the_width_to_one_rule(width):
    """``sizes.<size>.width`` is accepted exactly when the network it builds is."""
    from pydantic import ValidationError

    from negotiation.protocol._schema_recipe import PolicySize

    def accepted(build) -> bool:
        try:
            build()
        except ValidationError:
            return False
        return True

    in_protocol = accepted(lambda: PolicySize(kind="policy", width=width, checkpoint="init/w", init_seed=0))
    assert in_protocol == accepted(lambda: PolicyArch(width=width)) == (2 <= width <= 4096)
