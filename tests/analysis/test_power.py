"""The minimum detectable effect of a seed-cluster contrast, against a plain simulation of the test."""

import json
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.analysis import (AnalysisError, allowance_for_chance, cluster_spread, false_trip_chance,
                                 guard_trip_table, minimum_detectable_effect, power_table, ratio_spread)
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
    assert "parse_rate (allowance" in alone.output and "deal_rate (allowance" in alone.output
    assert [g["guard"] for g in payload["guard_false_trips"]] == ["parse_rate", "turns", "deal_rate"]
    assert payload["trip_chance"] == 0.05 and "allowance tripped 5% of the time: 8 seeds" in alone.output
    for g in payload["guard_false_trips"]:
        assert [a["seeds"] for a in g["allowances"]] == [8, 32]
        assert g["allowances"][0]["allowance"] == pytest.approx(allowance_for_chance(g["spread"], 8, 0.05))
    bad = CliRunner().invoke(analysis_app, ["power", str(b), "--trip-chance", "1.5", "--root", str(demo_root)])
    assert bad.exit_code == 2 and "--trip-chance" in bad.output and "1.5" in bad.output


def _pilot(rng: np.random.Generator, seeds: int, episodes_per_seed: int = 18, bad_rate: float = 0.03) -> pd.DataFrame:
    """An episode table of one arm: per episode 4-12 seller turns, each bad with ``bad_rate``
    (a per-seed rate that varies, as scenarios make it), turns and deals drawn per episode."""
    n = seeds * episodes_per_seed
    seed = np.repeat(np.arange(seeds), episodes_per_seed)
    turns = rng.integers(4, 13, size=n)
    rate = np.clip(bad_rate * rng.gamma(4.0, 0.25, size=seeds), 0, 1)[seed]
    return pd.DataFrame({"seed": seed, "n_seller_turns": turns, "n_bad_seller": rng.binomial(turns, rate),
                         "n_turns": 2 * turns, "deal": rng.random(n) < 0.9})


def _pooled(frame: pd.DataFrame) -> float:
    return frame["n_bad_seller"].sum() / frame["n_seller_turns"].sum()


def test_the_pooled_rates_spread_over_root_k_is_its_standard_error_across_designs():
    """One big pilot's ``ratio_spread`` predicts how much the pooled bad-parse rate of a K-seed
    design varies across independent runs of that design (the delta method, within 5 %)."""
    rng = np.random.default_rng(11)
    spread, clusters = ratio_spread(*(_pilot(rng, 4000)[c].to_numpy(float) for c in ("n_bad_seller", "n_seller_turns")),
                                    np.repeat(np.arange(4000), 18))
    assert clusters == 4000
    rates = [_pooled(_pilot(rng, 16)) for _ in range(3000)]
    assert np.std(rates, ddof=1) == pytest.approx(spread / np.sqrt(16), rel=0.05)


@pytest.mark.parametrize("allowance", [0.0, 0.005, 0.01])
def test_a_correct_arm_trips_a_one_sided_guard_as_often_as_false_trip_chance_says(allowance):
    """Two independent runs of the same process, 16 seeds each: the share where arm - base exceeds
    the allowance matches the normal approximation (within 1.5 points)."""
    rng = np.random.default_rng(5)
    big = _pilot(rng, 4000)
    spread, _ = ratio_spread(big["n_bad_seller"].to_numpy(float), big["n_seller_turns"].to_numpy(float),
                             big["seed"].to_numpy())
    trips = np.mean([_pooled(_pilot(rng, 16)) - _pooled(_pilot(rng, 16)) > allowance for _ in range(3000)])
    assert trips == pytest.approx(false_trip_chance(spread, 16, allowance), abs=0.015)


@given(spread=st.floats(0.0, 1.0), k=st.integers(1, 10_000), allowance=st.floats(0.0, 1.0))
@settings(max_examples=50, deadline=None)
def test_false_trips_are_a_probability_that_more_seeds_never_raise(spread, k, allowance):
    chance = false_trip_chance(spread, k, allowance)
    assert 0.0 <= chance <= 0.5 + 1e-12
    assert false_trip_chance(spread, 4 * k, allowance) <= chance + 1e-12


@given(spread=st.floats(1e-4, 1.0), k=st.integers(1, 10_000), chance=st.floats(0.001, 0.499))
@settings(max_examples=50, deadline=None)
def test_the_suggested_allowance_trips_exactly_as_often_as_asked(spread, k, chance):
    """``allowance_for_chance`` inverts ``false_trip_chance``: a re-freeze that sets it gets that chance."""
    allowance = allowance_for_chance(spread, k, chance)
    assert allowance > 0 and false_trip_chance(spread, k, allowance) == pytest.approx(chance, rel=1e-6)
    assert allowance_for_chance(spread, 4 * k, chance) == pytest.approx(allowance / 2)


def test_an_allowance_for_a_chance_of_one_half_or_more_is_zero_and_bad_input_is_named():
    assert allowance_for_chance(0.02, 16, 0.5) == 0.0 and allowance_for_chance(0.02, 16, 0.9) == 0.0
    with pytest.raises(AnalysisError, match="chance 1.0"):
        allowance_for_chance(0.02, 16, 1.0)


def test_guard_trip_table_reads_the_protocols_allowances_and_rejects_a_lone_seed():
    class Rule:
        def __init__(self, **kw):
            self.__dict__.update(kw)
    guards = Rule(parse_rate=Rule(max_increase=0.005), turns=Rule(max_increase_over_base=2.0),
                  deal_rate=Rule(max_drop=0.05))
    table = guard_trip_table(_pilot(np.random.default_rng(3), 8), guards, [8, 32])
    assert [(g["guard"], g["allowance"]) for g in table] == [("parse_rate", 0.005), ("turns", 2.0), ("deal_rate", 0.05)]
    for g in table:
        (k8, c8), (k32, c32) = g["chances"]
        assert (k8, k32) == (8, 32) and c32 <= c8
        (_, a8), (_, a32) = g["allowances"]
        assert a32 == pytest.approx(a8 / 2) and false_trip_chance(g["spread"], 8, a8) == pytest.approx(0.05)
    with pytest.raises(AnalysisError, match="seed cluster"):
        guard_trip_table(_pilot(np.random.default_rng(3), 1), guards, [8])
