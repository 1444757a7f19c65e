"""benchmarks/rollout.py --small runs end to end on the CPU, so the GPU benchmark never breaks unnoticed."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_rollout_benchmark_small_mode_reports_both_paths_with_equal_tokens(tmp_path):
    run_small("rollout.py", "--out", str(tmp_path / "rollout.json"))
    out = json.loads((tmp_path / "rollout.json").read_text())
    for path in ("engine", "reference"):
        row = out[path]
        assert row["gen_tokens"] > 0 and row["seconds"] > 0 and row["decode_steps"] > 0
        assert 0 < row["live_share"] <= 1
    assert out["engine"]["gen_tokens"] == out["reference"]["gen_tokens"] and out["same_tokens"]
