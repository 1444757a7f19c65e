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
    assert report["tasks"]["opening"]["estimator"] == {"baseline": "leave_one_out", "normalize_rewards": False}


@pytest.mark.slow
def test_an_estimator_given_on_the_command_line_trains_every_run(tmp_path):
    out = tmp_path / "group_mean"
    run_small("learning.py", "--out", str(out), "--tasks", "opening", "--baseline", "group_mean",
              "--normalize-rewards", "true", timeout=600)
    report = json.loads((out / "learning.json").read_text())
    assert report["tasks"]["opening"]["estimator"] == {"baseline": "group_mean", "normalize_rewards": True}


@pytest.mark.slow
def test_side_by_side_runs_train_what_one_process_trains(tmp_path):
    """--jobs 2: each task's run and control in their own processes, the same curves as in one process
    (CPU runs repeat exactly), a log per part, the verdicts read once all finished."""
    reports = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        run_small("learning.py", "--out", str(out), "--control", "--tasks", "opening", "--jobs", jobs, timeout=600)
        reports[jobs] = json.loads((out / "learning.json").read_text())["tasks"]["opening"]
    assert {p.name for p in (tmp_path / "jobs2").glob("*.log")} == {"opening_run.log", "opening_control.log"}
    assert reports["2"]["curves"] == reports["1"]["curves"] and reports["2"]["paired"] == reports["1"]["paired"]
