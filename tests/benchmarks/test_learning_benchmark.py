"""benchmarks/learning.py --small runs the learning ladder's plumbing in seconds (its verdicts mean nothing)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.benchmarks.small import BENCHMARKS, run_small


@pytest.mark.slow
def test_learning_benchmark_small_mode_prints_both_tasks(tmp_path):
    """One process, then --jobs 2 (the base, then each run and control, in a process of its own): the
    same curves (CPU runs repeat exactly), a log per part, the verdicts read once all finished."""
    out = tmp_path / "small"
    run = run_small("learning.py", "--out", str(out), "--control", timeout=600)
    report = json.loads((out / "learning.json").read_text())
    assert report["small"] and set(report["tasks"]) == {"format", "opening"}
    for result in report["tasks"].values():
        assert len(result["curves"]["train/reward"]) == 2 and "passed" in result
        assert result["paired"][0]["metric"] == result["criteria"][0]["metric"]  # read against the frozen run
    assert "== format" in run.stdout and "== opening" in run.stdout and "minus the frozen control" in run.stdout
    assert report["tasks"]["opening"]["estimator"] == {"baseline": "leave_one_out", "normalize_rewards": False}
    side = tmp_path / "side_by_side"
    run_small("learning.py", "--out", str(side), "--control", "--tasks", "opening", "--jobs", "2", timeout=600)
    parallel = json.loads((side / "learning.json").read_text())["tasks"]["opening"]
    assert {p.name for p in side.glob("*.log")} == {"opening_base.log", "opening_run.log", "opening_control.log"}
    assert parallel["curves"] == report["tasks"]["opening"]["curves"]
    assert parallel["paired"] == report["tasks"]["opening"]["paired"]


def _learning_module():
    spec = importlib.util.spec_from_file_location("learning_benchmark", BENCHMARKS / "learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_estimator_given_on_the_command_line_reaches_every_budget(monkeypatch, tmp_path):
    from negotiation import learning

    seen = {}

    def fake_task(protocol, ladder, name, *, machine, out, **kwargs):
        seen[name] = getattr(ladder.tasks[name], machine)
        (out / f"{name}_lm_xs").mkdir(parents=True, exist_ok=True)
        (out / f"{name}_lm_xs" / "curves.csv").write_text("step,train/reward\n1,0.0\n")
        return {"machine": machine, "size": "lm_xs", "steps": 1, "learning_rate": 1.0, "base": "b", "criteria": [],
                "passed": True}

    monkeypatch.setattr(learning, "run_learning_task", fake_task)
    _learning_module().main(["--small", "--tasks", "opening", "format", "--baseline", "group_mean",
                             "--normalize-rewards", "true", "--seed", "3", "--out", str(tmp_path)])
    assert {(b.baseline, b.normalize_rewards, b.seed) for b in seen.values()} == {("group_mean", True, 3)}


def test_a_failing_part_stops_the_parts_still_running(monkeypatch, tmp_path):
    import argparse
    import sys

    module = _learning_module()
    commands = {"fails": [sys.executable, "-c", "raise SystemExit(3)"],
                "sleeps": [sys.executable, "-c", "import time; time.sleep(60)"]}
    monkeypatch.setattr(module, "_part_command", lambda args, name, part: commands[name])
    started = []
    real_popen = module.subprocess.Popen
    monkeypatch.setattr(module.subprocess, "Popen", lambda *a, **k: started.append(real_popen(*a, **k)) or started[-1])
    with pytest.raises(SystemExit, match="fails run: exit status 3"):
        module._train_side_by_side(argparse.Namespace(jobs=2, out=tmp_path), [("fails", "run"), ("sleeps", "run")])
    assert started[1].poll() is not None  # terminated, not left running for a minute
    assert (tmp_path / "sleeps_run.log").is_file()
