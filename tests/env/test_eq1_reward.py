"""Eq. 1 with the paper's constants (T = 12, λ = 0.3, g = 0.05, t_soft = 9) and its front-loaded form."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env import episode_reward, eq1_reward, frontloaded_step_rewards, run_episode
from tests.env.toy_env import Replay, env_config, message

CFG = env_config()


@pytest.mark.parametrize("outcome,n_bad,n_policy,n_rounds,expected", [
    (0.8, 0, 4, 4, 0.8),                            # short clean deal: no penalty
    (0.8, 1, 4, 10, 0.8 - 0.05 * 0.25 - 0.05 / 3),  # one bad turn in four; one round past t_soft
    (0.8, 0, 9, 9, 0.8),                            # n = t_soft exactly: no length penalty
    (-0.3, 0, 12, 12, -0.35),                       # no-deal at the cap: full length penalty
    (-0.3, 12, 12, 12, -0.40),                      # every seller turn malformed
    (0.5, 2, 11, 11, 0.5 - 0.05 * 2 / 11 - 0.05 * 2 / 3),
])
def test_eq1_by_hand(outcome, n_bad, n_policy, n_rounds, expected):
    assert eq1_reward(outcome, n_bad, n_policy, n_rounds, CFG) == pytest.approx(expected)


def test_soft_budget_equal_to_the_cap_means_no_length_penalty():
    config = replace(CFG, t_soft=12.0)
    assert eq1_reward(-0.3, 0, 12, 12, config) == pytest.approx(-0.3)


def test_no_policy_turn_means_no_format_penalty():
    assert eq1_reward(0.6, 0, 0, 1, CFG) == pytest.approx(0.6)


def test_episode_reward_counts_rounds_not_turns(toy):
    """A deal closed by the seller on turn 21 lasts 11 rounds: penalty 0.05 * 2/3."""
    opener = message("COUNTER", price=100, days=10, volume=10, color="Blue", size="M",
                     extras=True, support=False)
    seller_texts = [opener, "no json at all"] + [message("COUNTER", price=100)] * 8 + [message("ACCEPT")]
    ep = run_episode(toy, Replay("s", seller_texts), Replay("b", [message("COUNTER", days=30)]), CFG)
    assert (ep.n_turns, ep.n_rounds, ep.closed_by) == (21, 11, "seller")
    # final ledger: the seller's best contract with days moved to 30 -> U = 1 - .1*2 = .8, Ũ = .9
    assert ep.S == pytest.approx(0.9)
    assert ep.n_bad("seller") == 1 and ep.n_turns_of("seller") == 11
    assert episode_reward(ep) == pytest.approx(0.9 - 0.05 / 11 - 0.05 * 2 / 3)


def test_no_deal_episode_reward(toy):
    ep = run_episode(toy, Replay("s", [message("COUNTER", price=90)]),
                     Replay("b", [message("COUNTER", price=10)]), CFG)
    assert episode_reward(ep) == pytest.approx(-0.35)


def test_frontloaded_floor_by_hand():
    assert frontloaded_step_rewards(4, 0.7, 0.3) == pytest.approx([-0.3, 0.0, 0.0, 1.0])
    assert frontloaded_step_rewards(1, 0.7, 0.3) == pytest.approx([0.7])
    assert frontloaded_step_rewards(3, 0.7, 0.3, terminated=False) == pytest.approx([-0.3, 0.0, 0.0])
    assert frontloaded_step_rewards(12, -0.35, 0.3) == pytest.approx([-0.3] + [0.0] * 10 + [-0.05])
    with pytest.raises(ValueError, match="at least one policy step, got 0"):
        frontloaded_step_rewards(0, 0.7, 0.3)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 24), total=st.floats(-1, 1), lam=st.floats(0, 1))
def test_frontloaded_sums_equal_eq1_and_truncation_keeps_the_floor(n, total, lam):
    assert sum(frontloaded_step_rewards(n, total, lam)) == pytest.approx(total, abs=1e-12)
    assert sum(frontloaded_step_rewards(n, total, lam, terminated=False)) == pytest.approx(-lam)
