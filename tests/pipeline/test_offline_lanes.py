"""Two ``run_offline`` calls at once on disjoint stages (a training lane beside an evaluation lane
on one GPU) keep every finished stage in the shared ledger, and a lane skips what another ran."""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import yaml

from negotiation.pipeline import LEDGER, run_offline

STAGES = [f"s{i}" for i in range(12)]


def _pipeline(tmp_path: Path) -> Path:
    sleep = f"{sys.executable} -c 'import time; time.sleep(0.05)'"
    graph = {"vars": [{"plan": {"out": "out"}}], "stages": {name: {"cmd": sleep} for name in STAGES}}
    path = tmp_path / "dvc.yaml"
    path.write_text(yaml.safe_dump(graph), encoding="utf-8")
    return path


def _lane(pipeline: str, root: str, patterns: tuple[str, ...]) -> None:
    run_offline(pipeline, Path(root), groups=tuple(STAGES), patterns=patterns)


def test_two_lanes_at_once_keep_every_entry_of_the_ledger(tmp_path):
    pipeline = _pipeline(tmp_path)
    lanes = [tuple(STAGES[0::2]), tuple(STAGES[1::2])]
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_lane, args=(str(pipeline), str(tmp_path), lane)) for lane in lanes]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ledger = json.loads((tmp_path / "out" / LEDGER).read_text(encoding="utf-8"))
    assert sorted(ledger) == sorted(STAGES)


def test_a_lane_skips_a_stage_another_lane_finished_after_it_started(tmp_path):
    pipeline = _pipeline(tmp_path)
    assert run_offline(pipeline, tmp_path, groups=tuple(STAGES), patterns=("s0",)) == ["s0"]
    assert run_offline(pipeline, tmp_path, groups=tuple(STAGES), patterns=("s0", "s1")) == ["s1"]


def test_a_metrics_file_a_fresh_copy_of_the_checkout_replaced_comes_back_from_the_ledger(tmp_path):
    write = (f"{sys.executable} -c \"import pathlib; [pathlib.Path(p).parent.mkdir(parents=True, exist_ok=True) "
             f"or pathlib.Path(p).write_text(p) for p in ('metrics/m/a.json', 'out/evaluate/a.txt')]\"")
    graph = {"vars": [{"plan": {"out": "out"}}],
             "stages": {"evaluate": {"cmd": write, "outs": ["out/evaluate/a.txt", {"metrics/m/a.json": {"cache": False}}]},
                        "later": {"cmd": f"{sys.executable} -c 'pass'"}}}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(graph), encoding="utf-8")
    assert run_offline(tmp_path / "dvc.yaml", tmp_path, groups=("evaluate", "later"), patterns=("evaluate",)) == ["evaluate"]
    entry = json.loads((tmp_path / "out" / LEDGER).read_text(encoding="utf-8"))["evaluate"]
    assert entry["kept"] == {"metrics/m/a.json": "metrics/m/a.json"}  # the profile's own folder is not copied
    (tmp_path / "metrics" / "m" / "a.json").unlink()  # the next call's copy of the working tree lacks it
    assert run_offline(tmp_path / "dvc.yaml", tmp_path, groups=("evaluate", "later")) == ["later"]
    assert (tmp_path / "metrics" / "m" / "a.json").read_text(encoding="utf-8") == "metrics/m/a.json"
