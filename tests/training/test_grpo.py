"""Hand-computed checks of the GRPO pieces: LOO advantages, k3 KL, clipping, the LR schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from negotiation.training import clipped_surrogate, group_advantages, k3_kl, loo_advantages, lr_at, masked_mean

EPS = 1e-6


def test_loo_advantages_by_hand():
    # Group [1, 2, 3, 6]. Rollout 3: others [1, 2, 3], mean 2, sample std 1 -> (6 - 2) / (1 + eps).
    # Rollout 2: others [1, 2, 6], mean 3 -> advantage 0.
    # Rollout 0: others [2, 3, 6], mean 11/3, squared deviations 25/9 + 4/9 + 49/9 = 78/9,
    #   sample variance 78/18 = 13/3 -> std sqrt(13/3) = 2.0816660; (1 - 11/3) / std = -1.2810246.
    # Rollout 1: others [1, 3, 6], mean 10/3, squared deviations 49/9 + 1/9 + 64/9 = 114/9,
    #   variance 19/3 -> std 2.5166115; (2 - 10/3) / std = -0.5298127.
    adv = loo_advantages(np.array([[1.0, 2.0, 3.0, 6.0]]))
    expected = [(1 - 11 / 3) / (math.sqrt(13 / 3) + EPS), (2 - 10 / 3) / (math.sqrt(19 / 3) + EPS),
                0.0, 4.0 / (1.0 + EPS)]
    np.testing.assert_allclose(adv[0], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(adv[0], [-1.2810246, -0.5298127, 0.0, 3.999996], atol=1e-6)


def test_loo_advantages_identical_others_keep_plain_difference():
    # Rollout 0 of [0, 1, 1, 1]: its others all scored 1 (std 0) -> advantage 0 - 1 = -1.
    # Rollout 1: others [0, 1, 1], mean 2/3, variance (4/9 + 1/9 + 1/9) / 2 = 1/3 -> (1/3) / sqrt(1/3).
    adv = loo_advantages(np.array([[0.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5]]))
    third = (1 / 3) / (math.sqrt(1 / 3) + EPS)
    np.testing.assert_allclose(adv, [[-1.0, third, third, third], [0.0, 0.0, 0.0, 0.0]], atol=1e-12)


@pytest.mark.parametrize("shape", [(4,), (2, 2), (1, 2, 3)])
def test_loo_advantages_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match="group_size >= 3"):
        loo_advantages(np.zeros(shape))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (3, 5), elements=st.integers(-20, 20).map(lambda k: k / 10)),
       st.integers(-50, 50).map(lambda k: k / 10))
def test_loo_advantages_shift_invariant_and_signed(rewards, shift):
    adv = loo_advantages(rewards)
    np.testing.assert_allclose(loo_advantages(rewards + shift), adv, atol=1e-5)
    others_mean = (rewards.sum(1, keepdims=True) - rewards) / (rewards.shape[1] - 1)
    gap = rewards - others_mean
    assert np.all(adv[gap > 1e-9] > 0) and np.all(adv[gap < -1e-9] < 0)


def _advantages_by_loop(rewards: np.ndarray, baseline: str, normalize: bool) -> np.ndarray:
    """The plain reference: per rollout, its baseline rollouts, their mean and sample std."""
    out = np.zeros_like(rewards)
    for g, row in enumerate(rewards):
        for i, r in enumerate(row):
            pool = [x for j, x in enumerate(row) if j != i] if baseline == "leave_one_out" else list(row)
            mean = sum(pool) / len(pool)
            std = math.sqrt(sum((x - mean) ** 2 for x in pool) / (len(pool) - 1))
            out[g, i] = (r - mean) / (std + EPS) if normalize and std > 1e-9 else r - mean
    return out


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, (3, 4), elements=st.integers(-20, 20).map(lambda k: k / 10)),
       st.sampled_from(["leave_one_out", "group_mean"]), st.booleans())
def test_group_advantages_match_the_plain_loop(rewards, baseline, normalize):
    np.testing.assert_allclose(group_advantages(rewards, baseline=baseline, normalize=normalize),
                               _advantages_by_loop(rewards, baseline, normalize), atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, (2, 4), elements=st.floats(-1, 1)))
def test_group_mean_normalized_advantages_are_bounded_where_leave_one_out_ones_are_not(rewards):
    g = rewards.shape[1]
    assert np.all(np.abs(group_advantages(rewards, baseline="group_mean")) <= (g - 1) / math.sqrt(g) + 1e-9)
    assert np.all(np.abs(group_advantages(rewards, normalize=False)) <= 2.0 + 1e-12)


def test_leave_one_out_scale_blows_up_when_the_others_nearly_tie():
    # what the CPU opening task showed (|advantage| mean 4,712 in a step): three returns 1e-5 apart
    # and one 0.5 above them; the group's own spread keeps it at (G - 1) / sqrt(G) = 1.5
    rewards = np.array([[0.5, -0.3, -0.3 + 1e-5, -0.3 - 1e-5]])
    assert loo_advantages(rewards)[0, 0] > 5e4
    assert group_advantages(rewards, baseline="group_mean")[0, 0] == pytest.approx(1.5, abs=1e-4)


def test_k3_kl_by_hand():
    # p = 0.5, p_ref = 0.25: r = log(0.25 / 0.5) = -log 2; exp(r) - 1 - r = 0.5 - 1 + log 2.
    # p = 0.25, p_ref = 0.5: r = log 2; 2 - 1 - log 2.
    logp = torch.log(torch.tensor([0.5, 0.25, 0.3]))
    ref = torch.log(torch.tensor([0.25, 0.5, 0.3]))
    kl = k3_kl(logp, ref)
    torch.testing.assert_close(kl, torch.tensor([math.log(2) - 0.5, 1 - math.log(2), 0.0]),
                               atol=1e-6, rtol=0)


def test_k3_kl_clamps_the_log_ratio():
    kl = k3_kl(torch.tensor([0.0]), torch.tensor([-100.0]))
    # r clamped to -20: exp(-20) - 1 + 20.
    torch.testing.assert_close(kl, torch.tensor([math.exp(-20) + 19.0]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-8, 0), min_size=1, max_size=8), st.lists(st.floats(-8, 0), min_size=1, max_size=8))
def test_k3_kl_is_non_negative(a, b):
    n = min(len(a), len(b))
    kl = k3_kl(torch.tensor(a[:n], dtype=torch.float64), torch.tensor(b[:n], dtype=torch.float64))
    assert torch.all(kl >= -1e-12)


@pytest.mark.parametrize("ratio, adv, loss", [
    (1.5, 1.0, -1.2),   # gain capped at 1 + 0.2
    (0.5, 1.0, -0.5),   # pessimistic side: the unclipped ratio is smaller
    (0.5, -1.0, 0.8),   # min(-0.5, -0.8): clipped at 1 - 0.2
    (1.5, -1.0, 1.5),   # min(-1.5, -1.2): an increased bad action is never clipped
    (1.0, 2.0, -2.0),   # on-policy: plain policy gradient
])
def test_clipped_surrogate_by_hand(ratio, adv, loss):
    got = clipped_surrogate(torch.tensor([ratio]), torch.tensor([adv]), 0.2, 0.2)
    assert float(got) == pytest.approx(loss)


def test_clipped_surrogate_blocks_gradient_beyond_the_clip():
    ratio = torch.tensor([1.5, 1.1], requires_grad=True)
    clipped_surrogate(ratio, torch.tensor([1.0, 1.0]), 0.2, 0.2).sum().backward()
    assert ratio.grad.tolist() == [0.0, -1.0]


def test_clipped_surrogate_asymmetric_clip():
    got = clipped_surrogate(torch.tensor([2.0, 0.1]), torch.tensor([1.0, -1.0]), 0.1, 0.5)
    torch.testing.assert_close(got, torch.tensor([-1.5, 0.9]))


def test_masked_mean_counts_only_masked_tokens():
    values = torch.tensor([[1.0, 100.0], [3.0, 5.0]])
    mask = torch.tensor([[True, False], [True, True]])
    assert float(masked_mean(values, mask)) == pytest.approx(3.0)


# Schedule: peak 1, floor 0.1, warmup 5, 15 steps.
#   warmup: (s + 1) / 5 -> 0.2, 0.4, 0.6, 0.8, 1.0 at steps 0..4;
#   cosine: 0.1 + 0.9 (1 + cos(pi (s - 4) / 10)) / 2 -> step 5: 0.1 + 0.45 (1 + cos 18°) = 0.9779754,
#   step 9: cos(90°) = 0 -> 0.55; step 14: cos(180°) = -1 -> the floor 0.1.
@pytest.mark.parametrize("step, lr", [
    (0, 0.2), (1, 0.4), (4, 1.0), (5, 0.9779754323), (9, 0.55), (14, 0.1),
])
def test_lr_schedule_by_hand(step, lr):
    assert lr_at(step, peak=1.0, floor=0.1, warmup_steps=5, total_steps=15) == pytest.approx(lr)


def test_lr_schedule_scales_with_the_multiple_and_restarts():
    shared = [lr_at(s, peak=1e-3, floor=1e-4, warmup_steps=5, total_steps=15) for s in range(15)]
    tripled = [lr_at(s, peak=3e-3, floor=3e-4, warmup_steps=5, total_steps=15) for s in range(15)]
    np.testing.assert_allclose(tripled, np.array(shared) * 3, rtol=1e-12)
    # A 10-step continuation restarts from its own warmup, not at the parent's floor.
    restart = [lr_at(s, peak=1e-3, floor=1e-4, warmup_steps=5, total_steps=10) for s in range(10)]
    assert restart[0] == pytest.approx(2e-4) and restart[4] == pytest.approx(1e-3)
    assert restart[9] == pytest.approx(1e-4)
    assert all(a >= b for a, b in zip(restart[4:], restart[5:]))


def test_lr_schedule_without_warmup_and_bad_steps():
    # No warmup: step 0 already decays, cos(pi / 4) over 4 steps.
    assert lr_at(0, peak=1.0, floor=0.0, warmup_steps=0, total_steps=4) == pytest.approx(
        (1 + math.cos(math.pi / 4)) / 2)
    with pytest.raises(ValueError, match=r"step must lie in \[0, 4\), got 4"):
        lr_at(4, peak=1.0, floor=0.0, warmup_steps=0, total_steps=4)
    with pytest.raises(ValueError, match="warmup_steps"):
        lr_at(0, peak=1.0, floor=0.0, warmup_steps=5, total_steps=4)
