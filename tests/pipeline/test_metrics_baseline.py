"""The demo's metrics are committed, so `dvc metrics diff` and `dvc exp show` compare a run with
a baseline (the metrics of the last committed `dvc repro`), not with nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_demo_arm_and_the_analysis_have_a_committed_metrics_baseline():
    listed = subprocess.run(["git", "ls-files", "metrics/demo"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.split()
    arms = yaml.safe_load((ROOT / "pipelines/plans/demo.yaml").read_text())["plan"]["arms"]
    assert sorted(listed) == sorted([f"metrics/demo/{arm}.json" for arm in arms] + ["metrics/demo/analysis.json"])
    for arm in arms:
        metrics = json.loads((ROOT / f"metrics/demo/{arm}.json").read_text())
        assert metrics["episodes"] > 0 and metrics["error_rows"] == 0 and -1 <= metrics["S"] <= 1
