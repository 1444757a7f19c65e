"""Seed-cluster bootstrap: hand-computed cases, reproducibility, scipy agreement, MC rule."""

import numpy as np
import pytest
from hypothesis import given, settings as hyp_settings, strategies as st
from scipy import stats

from negotiation.analysis import (
    AnalysisError,
    BootstrapSettings,
    SettingsError,
    bootstrap_p_value,
    cluster_bootstrap,
    cluster_totals,
    percentile_interval,
    resample_cluster_means,
)
from negotiation.analysis._bootstrap import normal_band_width


def make_settings(**overrides):
    base = dict(resamples=10_000, level=0.95, alpha=0.05, rerun_resamples=100_000, mc_z=1.96, mc_band=0.001, seed=7)
    base.update(overrides)
    return BootstrapSettings(**base)


def test_cluster_totals_group_by_sorted_cluster_id():
    sums, counts = cluster_totals(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([9, 7, 9, 7, 9]))
    assert sums.tolist() == [6.0, 9.0]  # cluster 7: 2+4, cluster 9: 1+3+5
    assert counts.tolist() == [2.0, 3.0]


def test_cluster_totals_rejects_nan_and_empty():
    with pytest.raises(AnalysisError, match="bootstrap:values: 1 non-finite"):
        cluster_totals(np.array([1.0, np.nan]), np.array([1, 2]))
    with pytest.raises(AnalysisError, match="no paired episodes"):
        cluster_totals(np.array([]), np.array([]))


def test_one_cluster_gives_a_degenerate_distribution():
    draws = resample_cluster_means(np.array([3.0]), np.array([4.0]), 500, np.random.default_rng(0))
    assert np.all(draws == 0.75)


def test_two_equal_clusters_give_quarter_half_quarter():
    # Resampling 2 clusters with means 0 and 2: {0,0}->0, {0,2}->1, {2,2}->2 with 1/4, 1/2, 1/4.
    draws = resample_cluster_means(np.array([0.0, 2.0]), np.array([1.0, 1.0]), 100_000, np.random.default_rng(1))
    values, freq = np.unique(draws, return_counts=True)
    assert values.tolist() == [0.0, 1.0, 2.0]
    assert np.allclose(freq / draws.size, [0.25, 0.5, 0.25], atol=0.01)


def test_unequal_clusters_weight_by_episode():
    # Cluster A: 1 episode summing to 1; B: 4 episodes summing to 10.
    # {A,A} -> 2/2 = 1, {A,B} -> 11/5 = 2.2, {B,B} -> 20/8 = 2.5.
    draws = resample_cluster_means(np.array([1.0, 10.0]), np.array([1.0, 4.0]), 2_000, np.random.default_rng(2))
    assert np.allclose(np.unique(draws), [1.0, 2.2, 2.5])


def test_percentile_interval_and_band_on_an_even_grid():
    draws = np.arange(101) / 100.0  # B = 101, positions 0..100 map to 0.00..1.00
    (low, high), (band_low, band_high) = percentile_interval(draws, level=0.90, mc_z=1.0)
    assert low == pytest.approx(0.05) and high == pytest.approx(0.95)
    # one binomial SD of the count below the 5% quantile: sqrt(101·0.05·0.95) = 2.19032 draws
    assert band_low == pytest.approx(0.0219032, abs=1e-6)
    assert band_high == pytest.approx(0.0219032, abs=1e-6)


def test_percentile_interval_matches_numpy_quantile():
    draws = np.random.default_rng(3).normal(size=9_999)
    (low, high), _ = percentile_interval(draws, level=0.95, mc_z=1.96)
    assert (low, high) == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])), rel=1e-12)


def test_p_value_is_the_estimate_over_its_bootstrap_se_against_scipy():
    from scipy import stats

    rng = np.random.default_rng(2)
    for estimate, sd in ((0.023, 0.0061), (0.001, 0.0102), (-0.05, 0.02), (0.0, 0.01)):
        draws = rng.normal(estimate, sd, size=10_000)
        independent = 2 * stats.norm.sf(abs(estimate) / np.std(draws, ddof=1))
        assert bootstrap_p_value(draws, estimate) == pytest.approx(independent, rel=1e-9)
    assert bootstrap_p_value(np.zeros(4), 0.0) == 1.0 and bootstrap_p_value(np.ones(4), 1.0) == 1.0  # no spread


def _paper_draws(mean: float, low: float, high: float, resamples: int = 10_000) -> np.ndarray:
    """Normal draws whose 95% percentile interval is the paper's [low, high]."""
    from scipy import stats

    quantiles = stats.norm.ppf((np.arange(resamples) + 0.5) / resamples)
    return mean + quantiles * (high - low) / (2 * stats.norm.ppf(0.975))


def test_p_values_fit_the_paper_s_figures_at_ten_thousand_resamples():
    # Appendix K: p <= 1.4e-4 for the 4.5B, 12B and 31B gains, p = 0.91 for 2.3B (Table 1 intervals).
    gains = {"e2b": (0.0011, -0.019, 0.021), "e4b": (0.0234, 0.011, 0.035), "12b": (0.063, 0.052, 0.075),
             "31b": (0.078, 0.064, 0.092)}
    p = {size: bootstrap_p_value(_paper_draws(*gain), gain[0]) for size, gain in gains.items()}
    assert max(p["e4b"], p["12b"], p["31b"]) <= 1.4e-4
    assert p["e2b"] == pytest.approx(0.91, abs=0.005)
    assert 2 * (1 + 0) / (10_000 + 1) > 1.4e-4  # why a count of draws past zero cannot fit
    ranked = sorted(p.values())
    assert all(pv <= 0.05 / (4 - i) for i, pv in enumerate(ranked[:3]))  # Holm: 0.0125, 0.0167, 0.025


def test_same_seed_gives_identical_intervals_and_another_seed_does_not():
    rng = np.random.default_rng(11)
    values, clusters = rng.normal(0.05, 0.2, size=1152), np.repeat(np.arange(64), 18)
    cfg = make_settings()
    first = cluster_bootstrap(values, clusters, cfg, np.random.default_rng(cfg.seed))
    second = cluster_bootstrap(values, clusters, cfg, np.random.default_rng(cfg.seed))
    other = cluster_bootstrap(values, clusters, cfg, np.random.default_rng(cfg.seed + 1))
    assert first == second
    assert first.ci != other.ci
    assert first.mean == pytest.approx(values.mean())
    assert first.clusters == 64 and first.episodes == 1152


def test_agrees_with_scipy_on_cluster_means_within_mc_error():
    rng = np.random.default_rng(5)
    cluster_effect = rng.normal(0.03, 0.05, size=64)
    values = np.repeat(cluster_effect, 18) + rng.normal(0, 0.2, size=1152)
    clusters = np.repeat(np.arange(64), 18)
    cfg = make_settings(resamples=20_000, rerun_resamples=20_000)
    ours = cluster_bootstrap(values, clusters, cfg, np.random.default_rng(1))
    cluster_means = values.reshape(64, 18).mean(axis=1)
    ref = stats.bootstrap((cluster_means,), np.mean, n_resamples=20_000, method="percentile",
                          rng=np.random.default_rng(2), vectorized=True)
    ref_ci = (ref.confidence_interval.low, ref.confidence_interval.high)
    # Two independent estimates of one endpoint differ by sqrt(2) SDs at most ~2.9 times in 1000;
    # the band is 1.96 SDs, so 2 bands is a 2.8-SD allowance.
    for ours_end, ref_end, band in zip(ours.ci, ref_ci, ours.mc_error):
        assert abs(ours_end - ref_end) <= 2 * band


def test_band_scales_like_normal_theory():
    draws = np.random.default_rng(8).normal(0.0, 0.01, size=100_000)
    _, bands = percentile_interval(draws, level=0.95, mc_z=1.96)
    expected = normal_band_width(100_000, 0.95, 1.96) * 0.01
    assert bands[0] == pytest.approx(expected, rel=0.25)
    assert bands[1] == pytest.approx(expected, rel=0.25)


def test_rerun_when_a_bound_sits_inside_its_band():
    values, clusters = np.r_[np.full(18, 0.0), np.full(18, 0.1)], np.repeat([1, 2], 18)
    # Bounds are 0.0 and 0.1 exactly; the low bound is within any band of zero.
    result = cluster_bootstrap(values, clusters, make_settings(resamples=1_000, rerun_resamples=5_000),
                               np.random.default_rng(0))
    assert result.rerun and result.resamples == 5_000
    assert result.ci == pytest.approx((0.0, 0.1))


def test_no_rerun_when_bounds_are_far_from_zero():
    rng = np.random.default_rng(4)
    values, clusters = rng.normal(1.0, 0.1, size=640), np.repeat(np.arange(64), 10)
    result = cluster_bootstrap(values, clusters, make_settings(resamples=1_000), np.random.default_rng(0))
    assert not result.rerun and result.resamples == 1_000 and result.excludes_zero


def test_rerun_below_resamples_is_a_settings_error():
    with pytest.raises(SettingsError, match="settings:rerun_resamples: 500 is below resamples 1000"):
        cluster_bootstrap(np.ones(2), np.array([1, 2]), make_settings(resamples=1_000, rerun_resamples=500),
                          np.random.default_rng(0))


@hyp_settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1, 1, allow_nan=False), st.integers(0, 6)), min_size=1, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_interval_lies_between_extreme_cluster_means(rows, seed):
    values = np.array([v for v, _ in rows])
    clusters = np.array([c for _, c in rows])
    result = cluster_bootstrap(values, clusters, make_settings(resamples=200, rerun_resamples=200),
                               np.random.default_rng(seed))
    sums, counts = cluster_totals(values, clusters)
    means = sums / counts
    assert means.min() - 1e-12 <= result.ci[0] <= result.ci[1] <= means.max() + 1e-12
    assert 0.0 <= result.p <= 1.0  # the normal tail may underflow far from zero
    assert result.mean == pytest.approx(values.mean())


def test_protocol_band_triggers_a_rerun_even_when_the_measured_band_is_narrow():
    # Cluster means 0.0005 and 0.0505: the low bound 0.0005 is inside the protocol's 0.001 band.
    values, clusters = np.r_[np.full(4, 0.0005), np.full(4, 0.0505)], np.repeat([1, 2], 4)
    narrow = make_settings(resamples=1_000, rerun_resamples=2_000, mc_z=1e-6)
    assert cluster_bootstrap(values, clusters, narrow, np.random.default_rng(0)).rerun
    no_band = make_settings(resamples=1_000, rerun_resamples=2_000, mc_z=1e-6, mc_band=0.0)
    assert not cluster_bootstrap(values, clusters, no_band, np.random.default_rng(0)).rerun
