"""The contrast family: a deal-only contrast with no paired deal is named, not estimated."""

import numpy as np
import pytest

from negotiation.analysis import BootstrapSettings, PairingError, not_estimable, run_family
from negotiation.study import ContrastSpec

from tests.analysis.frames import episode, frame

SETTINGS = BootstrapSettings(resamples=500, level=0.95, alpha=0.05, rerun_resamples=500, mc_z=1.96,
                             mc_band=0.001, seed=7)


def arms_one_never_closing():
    rng = np.random.default_rng(1)
    rows = {"A": [], "B": [], "C": []}
    for seed in range(6):
        for buyer in ("x", "y"):
            u = float(rng.uniform(0.3, 0.7))
            rows["A"].append(episode("A", "car", seed, buyer, seller_u=u + 0.1))
            rows["B"].append(episode("B", "car", seed, buyer, seller_u=u))
            rows["C"].append(episode("C", "car", seed, buyer, deal=False))  # never closes
    return {arm: frame(r) for arm, r in rows.items()}


def test_a_deal_only_contrast_without_a_paired_deal_is_left_out_without_moving_other_draws():
    frames = arms_one_never_closing()
    gain = ContrastSpec(name="A - B", weights={"A": 1, "B": -1}, primary=True)
    dist = ContrastSpec(name="C - B [seller_u_dist]", weights={"C": 1, "B": -1}, metric="seller_u_dist")
    floor = ContrastSpec(name="C - B", weights={"C": 1, "B": -1})
    with_skip = run_family(frames, [gain, dist, floor], SETTINGS)
    without = run_family(frames, [gain, floor], SETTINGS)
    assert [r.spec.name for r in with_skip] == ["A - B", "C - B"]
    assert with_skip == without  # the skipped contrast took no draw
    assert not_estimable([gain, dist, floor], with_skip) == ["C - B [seller_u_dist]"]
    assert with_skip[1].interval.episodes == 12  # S pairs no-deals too: it is estimated


def test_an_S_contrast_without_shared_keys_still_raises():
    frames = arms_one_never_closing()
    frames["B"] = frames["B"].assign(domain="job")
    with pytest.raises(PairingError, match="keys|unpaired"):
        run_family(frames, [ContrastSpec(name="A - B", weights={"A": 1, "B": -1})], SETTINGS)
