"""The minimum detectable effect of a seed-cluster contrast, against a plain simulation of the test."""

import json
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.analysis import AnalysisError, cluster_spread, minimum_detectable_effect, power_table
from negotiation.cli._analysis_cmds import analysis_app
from typer.testing import CliRunner


@pytest.mark.parametrize("clusters,tests", [(8, 1), (16, 3), (32, 6)])
def test_a_true_gain_of_the_mde_is_detected_with_the_stated_power(clusters, tests):
    """Simulate the design: K per-seed means around a true gain equal to the MDE, the two-sided
    z-test at alpha / tests; the share of rejections is the power asked for."""
    rng = np.random.default_rng(7)
    spread, alpha, power = 0.12, 0.05, 0.8
    gain = minimum_detectable_effect(spread, clusters, alpha=alpha, power=power, tests=tests)
    means = rng.normal(gain, spread, size=(40_000, clusters)).mean(axis=1)
    critical = NormalDist().inv_cdf(1 - alpha / (2 * tests))
    detected = np.abs(means / (spread / np.sqrt(clusters))) > critical
    assert detected.mean() == pytest.approx(power, abs=0.01)


@given(spread=st.floats(0.001, 1.0), k=st.integers(2, 10_000))
@settings(max_examples=50, deadline=None)
def test_the_mde_halves_with_four_times_the_seeds(spread, k):
    one = minimum_detectable_effect(spread, k, alpha=0.05, power=0.8, tests=2)
    assert minimum_detectable_effect(spread, 4 * k, alpha=0.05, power=0.8, tests=2) == pytest.approx(one / 2)
    assert [k for k, _ in power_table(spread, [k, 4 * k], alpha=0.05, power=0.8, tests=2)] == [k, 4 * k]


def test_the_spread_is_the_sd_of_the_per_seed_means_and_one_arm_counts_twice():
    frame = pd.DataFrame({"seed": [1, 1, 2, 2, 3, 3], "v": [0.1, 0.3, 0.5, 0.5, 0.9, 0.7]})
    plain = frame.groupby("seed")["v"].mean().std(ddof=1)
    paired, k = cluster_spread(frame["v"].to_numpy(), frame["seed"].to_numpy(), paired=True)
    single, _ = cluster_spread(frame["v"].to_numpy(), frame["seed"].to_numpy(), paired=False)
    assert k == 3 and paired == pytest.approx(plain) and single == pytest.approx(plain * np.sqrt(2))
    with pytest.raises(AnalysisError, match="at least 2"):
        cluster_spread(np.array([0.1, 0.2]), np.array([5, 5]), paired=True)
    with pytest.raises(AnalysisError, match="clusters 1"):
        minimum_detectable_effect(0.1, 1, alpha=0.05, power=0.8)


def test_nego_power_reads_two_arms_pairs_them_and_defaults_to_the_protocols_family(demo_root, demo_results):
    a = demo_results / "evaluate" / "w16_lr3x" / "episodes.parquet"
    b = demo_results / "evaluate" / "w16_base" / "episodes.parquet"
    run = CliRunner().invoke(analysis_app, ["power", str(a), str(b), "--seeds", "8,32", "--json",
                                            "--root", str(demo_root)])
    assert run.exit_code == 0, run.output
    payload = json.loads(run.output)
    merged = pd.read_parquet(a).merge(pd.read_parquet(b), on=["domain", "seed", "buyer"])
    per_seed = (merged["S_x"] - merged["S_y"]).groupby(merged["seed"]).mean()
    assert payload["paired"] and payload["measured_clusters"] == len(per_seed)
    assert payload["spread"] == pytest.approx(per_seed.std(ddof=1))
    assert payload["tests"] >= 1 and [d["seeds"] for d in payload["designs"]] == [8, 32]
    assert payload["designs"][1]["mde"] == pytest.approx(payload["designs"][0]["mde"] / 2)
    alone = CliRunner().invoke(analysis_app, ["power", str(b), "--root", str(demo_root)])
    assert alone.exit_code == 0 and "x sqrt 2" in alone.output and "64 seeds" in alone.output
