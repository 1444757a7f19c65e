"""benchmarks/generation.py --small times lm_xs's CPU generators on a few prompts and prints their ratios."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_generation_benchmark_small_mode_prints_its_figures(tmp_path):
    out = run_small("generation.py", "--out", str(tmp_path / "generation.json")).stdout
    row = json.loads((tmp_path / "generation.json").read_text())["sizes"]["lm_xs"]
    assert all(row[path]["tokens_per_s"] > 0 for path in ("batched", "static", "loop"))
    assert "batched/loop" in row["ratios"] and "lm_xs" in out.split("batched/loop")[-1]
