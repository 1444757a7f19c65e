"""benchmarks/learning.py --small runs the learning ladder's plumbing in seconds (its verdicts mean nothing)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_learning_benchmark_small_mode_prints_both_tasks(tmp_path):
    out = tmp_path / "small"
    run = run_small("learning.py", "--out", str(out), "--control", timeout=600)
    report = json.loads((out / "learning.json").read_text())
    assert report["small"] and set(report["tasks"]) == {"format", "opening"}
    for result in report["tasks"].values():
        assert len(result["curves"]["train/reward"]) == 2 and "passed" in result
        assert result["paired"][0]["metric"] == result["criteria"][0]["metric"]  # read against the frozen run
    assert "== format" in run.stdout and "== opening" in run.stdout and "minus the frozen control" in run.stdout
