"""The report's buyer-panel tables against a plain pandas reading of the same episodes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from negotiation.analysis import bootstrap_settings, panel_bases, panel_tables
from negotiation.study import load_study

BUYERS = ["agentk", "parsagent"]


def _frame(rng: np.random.Generator, shift: float, errors: int = 0) -> pd.DataFrame:
    rows = [{"domain": "job_offer", "seed": seed, "buyer": buyer, "S": float(rng.uniform(-0.3, 1.0)) + shift,
             "deal": True, "outcome": "deal"} for seed in range(8) for buyer in BUYERS]
    frame = pd.DataFrame(rows)
    if errors:  # the first rows become error rows: no score, no deal
        frame.loc[: errors - 1, ["outcome", "S", "deal"]] = ["error", np.nan, False]
    return frame


@pytest.fixture
def frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    return {"w16_base": _frame(rng, 0.0), "w16_lr3x": _frame(rng, 0.1, errors=2), "ref_boulware": _frame(rng, 0.0)}


def _settings():
    return bootstrap_settings(load_study("demo").protocol, seed=0, resamples=500)


def test_panel_bases_pair_each_non_base_arm_with_its_size_s_base():
    bases = panel_bases(load_study("demo").arms)
    assert bases["w16_lr3x"] == "w16_base" and bases["w128_shared_cont"] == "w128_base"
    assert "w16_base" not in bases and "ref_boulware" not in bases


def test_tables_match_a_plain_reading(frames):
    per_arm, by_buyer = panel_tables(frames, {"w16_lr3x": "w16_base"}, BUYERS, "Two agents.", "Ported with AI.",
                                     _settings(), np.random.default_rng(0))
    rows = {row[0]: row for row in per_arm.rows}
    lr3x, base = frames["w16_lr3x"], frames["w16_base"]
    ok = lr3x[lr3x["outcome"] != "error"]
    assert rows["w16_lr3x"][1:5] == ["16", "2", "100.0", f"{ok['S'].mean():.3f}"]
    paired = ok.merge(base, on=["domain", "seed", "buyer"], suffixes=("", "_base"))
    assert len(paired) == 14
    mean = (paired["S"] - paired["S_base"]).mean()
    assert rows["w16_lr3x"][5].startswith(f"{mean:+.3f} [")
    low, high = (float(x) for x in rows["w16_lr3x"][5].split("[")[1].rstrip("]").split(","))
    assert low <= mean <= high
    assert rows["w16_base"][5] == "—" and rows["ref_boulware"][5] == "—"
    by = {row[0]: row[1:] for row in by_buyer.rows}
    assert by["w16_base"] == [f"{base[base.buyer == b]['S'].mean():.3f}" for b in BUYERS]
    assert "Ported with AI." in per_arm.caption and "Ported with AI." in by_buyer.caption
    assert "no multiplicity correction" in per_arm.caption


def test_the_interval_is_one_generator_s_draws(frames):
    first = panel_tables(frames, {"w16_lr3x": "w16_base"}, BUYERS, "d", "c", _settings(), np.random.default_rng(4))
    again = panel_tables(frames, {"w16_lr3x": "w16_base"}, BUYERS, "d", "c", _settings(), np.random.default_rng(4))
    assert first[0].rows == again[0].rows
