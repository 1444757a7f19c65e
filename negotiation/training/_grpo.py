"""The GRPO estimator's pieces, each small enough to check by hand.

- ``group_advantages``: NeMo-RL's ``grpo`` advantage estimator under its two switches,
  ``use_leave_one_out_baseline`` (``baseline``: the mean of the *other* rollouts of the group, or
  of the whole group) and ``normalize_rewards`` (divide by the sample standard deviation of the
  same rollouts, + 1e-6; a rollout whose baseline rollouts all scored the same keeps its
  unscaled difference). ``loo_advantages`` is the paper's choice (leave-one-out, normalized).
  With leave-one-out normalization a rollout's scale is its *others'* spread, which can be tiny
  while the rollout itself differs (three near-equal returns and one apart): its advantage is
  then unbounded; the group's own spread bounds it by ``(G - 1) / sqrt(G)``.
- ``k3_kl``: Schulman's k3 estimate of KL(policy || reference) per token,
  ``exp(r) - 1 - r`` with ``r = log p_ref - log p``; always >= 0.
- ``clipped_surrogate``: PPO's clipped objective per token, as a loss (negated).
- ``lr_at``: linear warmup to the peak, then cosine to the floor (see its docstring).
"""

from __future__ import annotations

import math

import numpy as np
import torch

STD_EPS = 1e-6  # added to the group std before dividing, as NeMo-RL does
ZERO_STD = 1e-9  # a deviation below this is rounding of identical rewards, not spread
MAX_GRAD_NORM = 1.0  # global gradient-norm clip: NeMo-RL's policy.max_grad_norm (the protocol states none)


def group_advantages(rewards: np.ndarray, *, baseline: str = "leave_one_out", normalize: bool = True) -> np.ndarray:
    """Group-relative advantages.

    Args:
        rewards: ``(n_groups, group_size)`` episode returns (``group_size >= 3``).
        baseline: ``leave_one_out`` (each rollout against the mean of its others) or
            ``group_mean`` (against the group's mean, itself included).
        normalize: divide by the sample (``ddof=1``) standard deviation of the baseline's rollouts
            + 1e-6, except where it is 0 up to rounding (``ZERO_STD``): there the plain difference.

    Returns:
        ``(n_groups, group_size)`` advantages.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 3:
        raise ValueError(f"rewards must be (n_groups, group_size >= 3), got shape {r.shape}")
    if baseline not in ("leave_one_out", "group_mean"):
        raise ValueError(f"baseline must be leave_one_out or group_mean, got {baseline!r}")
    g = r.shape[1]
    # counted[i, j]: rollout j enters rollout i's baseline and scale
    counted = ~np.eye(g, dtype=bool) if baseline == "leave_one_out" else np.ones((g, g), dtype=bool)
    n = counted.sum(1)
    base = (r[:, None, :] * counted).sum(-1) / n
    diff = r - base
    if not normalize:
        return diff
    # Deviations taken explicitly (not sum-of-squares minus square of sum): identical rewards
    # then give a zero deviation instead of cancellation noise.
    dev = r[:, None, :] - base[:, :, None]
    std = np.sqrt((dev ** 2 * counted).sum(-1) / (n - 1))
    return np.where(std > ZERO_STD, diff / (std + STD_EPS), diff)


def loo_advantages(rewards: np.ndarray) -> np.ndarray:
    """The paper's advantages: ``group_advantages`` with a leave-one-out baseline, normalized:
    ``(r_i - mean_{j!=i} r_j) / (std_{j!=i} r_j + 1e-6)``."""
    return group_advantages(rewards, baseline="leave_one_out", normalize=True)


def k3_kl(logp: torch.Tensor, logp_ref: torch.Tensor, clamp: float = 20.0) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference): ``exp(r) - 1 - r``, ``r = lp_ref - lp``.

    ``r`` is clamped to ``[-clamp, clamp]`` (NeMo-RL's input clamp) so one near-impossible
    token cannot blow the loss up.
    """
    r = (logp_ref - logp).clamp(-clamp, clamp)
    return torch.exp(r) - 1.0 - r


def clipped_surrogate(ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float,
                      clip_high: float) -> torch.Tensor:
    """PPO's clipped policy-gradient loss per token: ``-min(ρA, clip(ρ, 1-ε_lo, 1+ε_hi) A)``."""
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    return -torch.minimum(ratio * advantages, clipped * advantages)


def lr_at(step: int, *, peak: float, floor: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate of optimizer step ``step`` (0-based) of one warmup-cosine schedule.

    Steps ``0 .. W-1`` rise linearly, ``peak (s + 1) / W``, reaching the peak on the last warmup
    step; steps ``W .. N-1`` follow
    ``floor + (peak - floor) (1 + cos(π (s - W + 1) / (N - W))) / 2`` and reach the floor on the
    last step. A continuation run calls this with its own step
    count from 0 again: the schedule restarts, it does not resume the parent's cosine.
    """
    if not 0 <= step < total_steps:
        raise ValueError(f"step must lie in [0, {total_steps}), got {step}")
    if not 0 <= warmup_steps <= total_steps:
        raise ValueError(f"warmup_steps must lie in [0, {total_steps}], got {warmup_steps}")
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    span = total_steps - warmup_steps
    progress = (step - warmup_steps + 1) / span
    return floor + (peak - floor) * (1.0 + math.cos(math.pi * progress)) / 2.0


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the ``True`` entries of ``mask`` (token-level averaging across the batch)."""
    m = mask.to(values.dtype)
    return (values * m).sum() / m.sum().clamp(min=1.0)
