"""benchmarks/learning.py --small runs the learning ladder's plumbing in seconds (its verdicts mean nothing)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_learning_benchmark_small_mode_prints_both_tasks(tmp_path):
    out = tmp_path / "small"
    run = run_small("learning.py", "--out", str(out), timeout=600)
    report = json.loads((out / "learning.json").read_text())
    assert report["small"] and set(report["tasks"]) == {"format", "opening"}
    for result in report["tasks"].values():
        assert len(result["curves"]["train/reward"]) == 2 and "passed" in result
    assert "== format" in run.stdout and "== opening" in run.stdout
