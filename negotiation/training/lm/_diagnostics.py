"""Per-step diagnostics of the GRPO signal: how much the rewards of a group differ, and the
advantages they give.

GRPO learns only from differences within a group: a group whose returns are all equal has all
advantages 0 (``loo_advantages``) and contributes nothing but KL to the step. These figures say
how much of a step carried signal; they go to the curves beside the loss (they repeat exactly,
being functions of the returns).
"""

from __future__ import annotations

import numpy as np

from negotiation.training._grpo import ZERO_STD

__all__ = ["ADVANTAGE_QUANTILES", "group_signal"]

ADVANTAGE_QUANTILES = {"min": 0.0, "p10": 0.10, "p50": 0.50, "p90": 0.90, "max": 1.0}
"""Curve suffix -> quantile of the step's advantages."""


def group_signal(returns: np.ndarray, advantages: np.ndarray) -> dict[str, float]:
    """The step's reward spread and advantage distribution.

    Args:
        returns: ``(n_groups, group_size)`` episode returns of the step.
        advantages: the advantages the update trains on (any shape; the trained episodes').

    Returns:
        ``train/group_return_std``: mean over groups of the within-group standard deviation of the
        returns (population, ``ddof=0``); ``train/zero_std_groups``: share of groups whose returns
        are all equal (deviation at most ``ZERO_STD``: no policy-gradient signal);
        ``train/adv_min`` .. ``train/adv_max``: quantiles of the advantages (``ADVANTAGE_QUANTILES``,
        linear interpolation) and ``train/adv_abs_mean``: their mean absolute value.
    """
    r = np.asarray(returns, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"returns must be (n_groups, group_size), got shape {r.shape}")
    # Deviations from the group mean taken explicitly: equal returns give exactly 0.
    std = np.sqrt(((r - r.mean(1, keepdims=True)) ** 2).mean(1))
    a = np.asarray(advantages, dtype=np.float64).reshape(-1)
    out = {"train/group_return_std": float(std.mean()), "train/zero_std_groups": float((std <= ZERO_STD).mean())}
    if a.size == 0:
        return {**out, **{f"train/adv_{k}": float("nan") for k in (*ADVANTAGE_QUANTILES, "abs_mean")}}
    out.update({f"train/adv_{k}": float(np.quantile(a, q)) for k, q in ADVANTAGE_QUANTILES.items()})
    out["train/adv_abs_mean"] = float(np.abs(a).mean())
    return out
