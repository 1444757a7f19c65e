"""``run_lanes``: training stages in one lane, each arm's evaluation beside it as soon as its run is
in the ledger, on a synthetic study file with arm files shaped as the plan writes them (a base arm,
a trained arm, a continuation arm) and commands that log when they start and end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from negotiation.pipeline import LEDGER, lane_plan, run_lanes, stage_commands

GROUPS = ("init", "train", "select", "evaluate")


def _cmd(log: Path, name: str, seconds: float, fail: bool = False) -> str:
    """A stage that appends ``start <name> <t>`` and ``end <name> <t>`` to ``log``."""
    code = (f"import time, sys; f = open('{log}', 'a'); f.write(f'start {name} {{time.time()}}\\n'); f.flush(); "
            f"time.sleep({seconds}); f.write(f'end {name} {{time.time()}}\\n'); sys.exit({int(fail)})")
    return f'{sys.executable} -c "{code}"'


def _study(tmp_path: Path, fail_train: str = "") -> Path:
    def write(path: Path, graph: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(graph), encoding="utf-8")

    log = tmp_path / "events.log"
    write(tmp_path / "dvc.yaml", {"vars": [{"plan": {"out": "out", "arms_dir": "arms"}}],
                                  "stages": {"init": {"cmd": _cmd(log, "init", 0.05)}}})
    runs = {"a_run": ("a_run", "out/init"), "a_cont": ("a_cont", "out/train/a_run")}
    for arm in ("a_base", "a_run", "a_cont"):
        stages: dict = {}
        if arm in runs:
            run, start = runs[arm]
            stages["train"] = {"foreach": {run: {"start": start}},
                               "do": {"cmd": _cmd(log, "train@${key}", 2.0, fail=run == fail_train)}}
        stages |= {"select": {"cmd": _cmd(log, f"select@{arm}", 0.05)}, "evaluate": {"cmd": _cmd(log, f"evaluate@{arm}", 0.3)}}
        write(tmp_path / "arms" / arm / "dvc.yaml", {"stages": stages})
    return tmp_path / "dvc.yaml"


def _events(root: Path) -> dict[tuple[str, str], float]:
    lines = (root / "events.log").read_text(encoding="utf-8").split("\n")
    return {(kind, name): float(t) for kind, name, t in (line.split() for line in lines if line)}


def test_the_plan_puts_training_in_one_lane_and_each_arm_after_its_own_runs(tmp_path):
    commands = stage_commands(_study(tmp_path))
    before, training, arms = lane_plan(commands, commands)
    assert before == ["init"]
    assert training == ["train@a_run", "train@a_cont"]  # the parent before its continuation
    assert arms == [("a_base", ["select@a_base", "evaluate@a_base"], []),
                    ("a_run", ["select@a_run", "evaluate@a_run"], ["train@a_run"]),
                    ("a_cont", ["select@a_cont", "evaluate@a_cont"], ["train@a_cont"])]


def test_evaluation_runs_beside_training_and_waits_only_for_its_own_run(tmp_path, monkeypatch):
    monkeypatch.setattr("negotiation.pipeline._lanes.POLL_S", 0.05)
    ran = run_lanes(_study(tmp_path), tmp_path, groups=GROUPS)
    t = _events(tmp_path)
    assert sorted(ran) == sorted(json.loads((tmp_path / "out" / LEDGER).read_text(encoding="utf-8")))
    assert len(ran) == 9
    assert t["start", "select@a_base"] < t["end", "train@a_run"]  # the base arm beside the first run
    assert t["start", "select@a_run"] >= t["end", "train@a_run"]
    assert t["start", "select@a_run"] < t["end", "train@a_cont"]  # evaluated while the continuation trains
    assert t["start", "select@a_cont"] >= t["end", "train@a_cont"]
    assert run_lanes(_study(tmp_path), tmp_path, groups=GROUPS) == []  # the same call again: all in the ledger


def test_a_failed_run_skips_its_arms_and_the_call_fails_naming_it(tmp_path):
    with pytest.raises(SystemExit, match="stage train@a_run failed") as stop:
        run_lanes(_study(tmp_path, fail_train="a_run"), tmp_path, groups=GROUPS)
    assert "arm a_run not evaluated: train@a_run" in str(stop.value)
    ledger = json.loads((tmp_path / "out" / LEDGER).read_text(encoding="utf-8"))
    assert {"select@a_base", "evaluate@a_base"} <= set(ledger) and "select@a_run" not in ledger
    assert "train@a_cont" not in ledger  # the lane stops at its failed stage


def test_dry_prints_the_lanes_and_runs_nothing(tmp_path, capsys):
    names = run_lanes(_study(tmp_path), tmp_path, groups=GROUPS, patterns=("*@a_run",), dry=True)
    assert names == ["train@a_run", "select@a_run", "evaluate@a_run"]
    assert "evaluation lane: select@a_run, evaluate@a_run (after train@a_run)" in capsys.readouterr().err
    assert not (tmp_path / "events.log").exists()
