"""Within-scenario pairing: complete pairing for S, both-closed restriction for deal-only."""

import numpy as np
import pandas as pd
import pytest

from negotiation.analysis import (
    BootstrapSettings,
    MetricError,
    PairingError,
    add_late_close,
    buyer_split_series,
    contrast_values,
    metric_series,
    paired_values,
    run_family,
)
from negotiation.study import ContrastSpec

from tests.analysis.frames import episode, frame


def two_arms():
    a = frame([
        episode("A", "car", 1, "x", seller_u=0.8),
        episode("A", "car", 1, "y", deal=False),
        episode("A", "job", 2, "x", seller_u=0.5),
        episode("A", "job", 2, "y", seller_u=0.7),
    ])
    b = frame([
        episode("B", "car", 1, "x", seller_u=0.6),
        episode("B", "car", 1, "y", seller_u=0.4),
        episode("B", "job", 2, "x", deal=False),
        episode("B", "job", 2, "y", seller_u=0.2),
    ])
    return {"A": a, "B": b}


def test_S_pairs_every_episode():
    values = paired_values(two_arms(), {"A": 1.0, "B": -1.0}, "S")
    # car/1/x: .8-.6=.2 ; car/1/y: -.3-.4=-.7 ; job/2/x: .5-(-.3)=.8 ; job/2/y: .7-.2=.5
    assert values.to_dict() == pytest.approx({
        ("car", 1, "x"): 0.2, ("car", 1, "y"): -0.7, ("job", 2, "x"): 0.8, ("job", 2, "y"): 0.5})


def test_deal_only_keeps_scenarios_both_arms_closed():
    values = paired_values(two_arms(), {"A": 1.0, "B": -1.0}, "seller_u")
    assert values.to_dict() == pytest.approx({("car", 1, "x"): 0.2, ("job", 2, "y"): 0.5})


def test_welfare_is_the_sum_of_both_utilities():
    series = metric_series(two_arms()["A"], "welfare")
    assert series[("car", 1, "x")] == pytest.approx(0.8 + 0.5)
    assert ("car", 1, "y") not in series.index


def test_unpaired_key_is_named():
    arms = two_arms()
    arms["B"] = arms["B"].iloc[:3]
    with pytest.raises(PairingError, match=r"B:domain,seed,buyer: unpaired key \('job', 2, 'y'\)"):
        paired_values(arms, {"A": 1.0, "B": -1.0}, "S")


def test_error_row_cannot_be_paired():
    arms = two_arms()
    arms["A"].loc[0, "S"] = np.nan
    with pytest.raises(PairingError, match=r"A:S: non-finite value at key \('car', 1, 'x'\)"):
        paired_values(arms, {"A": 1.0, "B": -1.0}, "S")


def test_unknown_metric_and_duplicate_key():
    with pytest.raises(MetricError, match="contrast:metric: unknown metric 'SS'"):
        paired_values(two_arms(), {"A": 1.0, "B": -1.0}, "SS")
    doubled = pd.concat([two_arms()["A"]] * 2)
    with pytest.raises(MetricError, match="appears more than once"):
        metric_series(doubled, "S", where="A.parquet")


def test_buyer_split_is_x_minus_y_per_scenario():
    split = buyer_split_series(two_arms()["A"], "S", "x", "y")
    assert split.to_dict() == pytest.approx({("car", 1): 0.8 + 0.3, ("job", 2): 0.5 - 0.7})


def test_late_close_uses_the_closing_turn():
    rows = frame([episode("A", "car", 1, "x", n_turns=16), episode("A", "car", 2, "x", n_turns=15),
                  episode("A", "car", 3, "x", deal=False, n_turns=24)])
    flags = add_late_close(rows, converge_turn=16)["closes_late"].tolist()
    assert flags == [1.0, 0.0, 0.0]


def test_gain_difference_and_held_out_panel():
    arms = two_arms()
    arms["C"] = arms["A"].assign(arm="C", S=arms["A"]["S"] + 0.1)
    arms["D"] = arms["B"].assign(arm="D")
    spec = ContrastSpec(name="gain_gap", weights={"C": 1, "D": -1, "A": -1, "B": 1}, domains=("car",))
    values = contrast_values(arms, spec)
    assert values.to_dict() == pytest.approx({("car", 1, "x"): 0.1, ("car", 1, "y"): 0.1})


def test_family_marks_and_reproducibility():
    rng = np.random.default_rng(0)
    rows_a, rows_b = [], []
    for seed in range(20):
        for domain in ("car", "job"):
            for buyer in ("x", "y"):
                u = float(rng.uniform(0.3, 0.7))
                rows_a.append(episode("A", domain, seed, buyer, seller_u=u + 0.1))
                rows_b.append(episode("B", domain, seed, buyer, seller_u=u))
    frames = {"A": frame(rows_a), "B": frame(rows_b)}
    settings = BootstrapSettings(resamples=1000, level=0.95, alpha=0.05, rerun_resamples=1000, mc_z=1.96, mc_band=0.001, seed=3)
    specs = [ContrastSpec(name="gain", weights={"A": 1, "B": -1}, primary=True),
             ContrastSpec(name="buyer", weights={"A": 1, "B": -1}, buyer_split=("x", "y"))]
    first = run_family(frames, specs, settings)
    assert first == run_family(frames, specs, settings)
    gain, split = first
    assert gain.interval.mean == pytest.approx(0.1) and gain.interval.clusters == 20
    assert gain.holm_rejected and gain.mark == "*"
    # Every scenario has the same 0.1 gain against both buyers: the split difference is exactly 0.
    assert split.interval.mean == pytest.approx(0.0, abs=1e-12) and split.mark == "" and split.holm_p is None


def random_arms(seed, arms=("A", "B", "C")):
    rng = np.random.default_rng(seed)
    frames = {}
    for arm in arms:
        rows = [episode(arm, d, s, b, deal=bool(rng.random() < 0.8), seller_u=float(rng.random()),
                        buyer_u=float(rng.random()), seller_dist=float(rng.random()) * 0.3)
                for d in ("car", "job") for s in range(6) for b in ("x", "y")]
        frames[arm] = frame(rows).sample(frac=1.0, random_state=seed)  # row order must not matter
    return frames


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("spec", [
    ContrastSpec(name="s", weights={"A": 1, "B": -1}),
    ContrastSpec(name="gap", weights={"A": 1, "B": -1, "C": -1}, metric="welfare"),
    ContrastSpec(name="held", weights={"C": 1, "A": -1}, metric="seller_u_dist", domains=("job",)),
    ContrastSpec(name="split", weights={"A": 1, "B": -1}, buyer_split=("y", "x")),
    ContrastSpec(name="split_deal", weights={"A": 1, "C": -1}, metric="buyer_u", buyer_split=("x", "y")),
])
def test_integer_keyed_pairing_matches_the_pandas_reference(seed, spec):
    from negotiation.analysis._paired import PairedTables

    frames = random_arms(seed)
    reference = contrast_values(frames, spec)
    values, clusters = PairedTables(frames).values(spec)
    order = np.lexsort((values, clusters))
    ref_order = np.lexsort((reference.to_numpy(), reference.index.get_level_values("seed")))
    assert np.allclose(values[order], reference.to_numpy()[ref_order], atol=1e-12)
    assert clusters[order].tolist() == reference.index.get_level_values("seed")[ref_order].tolist()


def test_integer_keyed_pairing_names_unpaired_keys():
    from negotiation.analysis._paired import PairedTables

    arms = two_arms()
    arms["B"] = arms["B"].iloc[:3]
    with pytest.raises(PairingError, match=r"B:domain,seed,buyer: unpaired key \('job', 2, 'y'\)"):
        PairedTables(arms).values(ContrastSpec(name="s", weights={"A": 1, "B": -1}))
