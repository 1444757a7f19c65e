"""benchmarks/ladder.py --small builds lm_xs (cut corpus, 2 warm-start steps) and plays it: the plumbing, in seconds."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_ladder_benchmark_small_mode_prints_its_figures(tmp_path):
    out = run_small("ladder.py", "--out", str(tmp_path)).stdout
    row = json.loads((tmp_path / "ladder.json").read_text())["sizes"]["lm_xs"]
    assert row["steps"] == 2 and row["episodes"] == 2 and row["seller_turns"] > 0 and "lm_xs" in out
