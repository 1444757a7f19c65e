"""The per-step GRPO signal figures: within-group reward spread and advantage quantiles."""

from __future__ import annotations

import numpy as np
import pytest

from negotiation.training._grpo import loo_advantages
from negotiation.training.lm import group_signal


def test_spread_counts_groups_without_signal_and_quantiles_match_numpy():
    returns = np.array([[0.5, 0.5, 0.5], [0.0, 1.0, 2.0], [0.3, 0.3 + 1e-12, 0.3]])
    adv = loo_advantages(returns)
    out = group_signal(returns, adv)
    assert out["train/zero_std_groups"] == pytest.approx(2 / 3)  # the first and the rounding-only third
    assert out["train/group_return_std"] == pytest.approx(np.std([0.0, 1.0, 2.0]) / 3, rel=1e-9)
    flat = adv.reshape(-1)
    assert out["train/adv_min"] == flat.min() and out["train/adv_max"] == flat.max()
    assert out["train/adv_p10"] == pytest.approx(np.quantile(flat, 0.1))
    assert out["train/adv_p50"] == pytest.approx(np.median(flat))
    assert out["train/adv_p90"] == pytest.approx(np.quantile(flat, 0.9))
    assert out["train/adv_abs_mean"] == pytest.approx(np.abs(flat).mean())
    assert out["train/adv_p50"] == 0.0  # the equal groups' advantages are all 0


def test_all_equal_groups_carry_no_advantage():
    returns = np.full((4, 8), -0.2)
    out = group_signal(returns, loo_advantages(returns))
    assert out["train/zero_std_groups"] == 1.0 and out["train/group_return_std"] == 0.0
    assert out["train/adv_abs_mean"] == 0.0


def test_returns_must_be_grouped():
    with pytest.raises(ValueError, match="n_groups"):
        group_signal(np.zeros(6), np.zeros(6))
