"""The GRPO estimator's pieces, each small enough to check by hand.

- ``loo_advantages``: group-normalized advantages with a leave-one-out baseline, as NeMo-RL's
  ``grpo`` estimator computes them with ``use_leave_one_out_baseline`` and
  ``normalize_rewards``: the baseline of a rollout is the mean of the *other* rollouts of its
  group, the scale is the sample standard deviation of those others, and a rollout whose
  others all scored the same keeps its unscaled difference.
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


def loo_advantages(rewards: np.ndarray) -> np.ndarray:
    """Leave-one-out, std-normalized advantages.

    Args:
        rewards: ``(n_groups, group_size)`` episode returns; ``group_size >= 3`` so the others
            of a rollout have a sample standard deviation.

    Returns:
        ``(n_groups, group_size)``: ``(r_i - mean_{j!=i} r_j) / (std_{j!=i} r_j + 1e-6)``, with
        ``std`` the sample (``ddof=1``) deviation of the others; where that deviation is 0 (up
        to rounding, ``ZERO_STD``) the advantage is the plain difference.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 3:
        raise ValueError(f"rewards must be (n_groups, group_size >= 3), got shape {r.shape}")
    g = r.shape[1]
    others = ~np.eye(g, dtype=bool)  # others[i, j]: rollout j is one of rollout i's others
    mean_others = (r.sum(1, keepdims=True) - r) / (g - 1)
    # Deviations taken explicitly (not sum-of-squares minus square of sum): identical rewards
    # then give a zero deviation instead of cancellation noise.
    dev = r[:, None, :] - mean_others[:, :, None]
    std_others = np.sqrt((dev ** 2 * others).sum(-1) / (g - 2))
    diff = r - mean_others
    return np.where(std_others > ZERO_STD, diff / (std_others + STD_EPS), diff)


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
