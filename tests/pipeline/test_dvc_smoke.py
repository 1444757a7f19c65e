"""`dvc repro` of one arm in a copy of the checkout: the DVC wiring, the stage scripts and the
results layout end to end (reduced: a scripted reference arm needs no training), then a no-op."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from negotiation.protocol import default_root

pytestmark = pytest.mark.slow
ROOT = default_root()


def _checkout_copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)


def _dvc(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}", "PYTHONPATH": str(cwd)}
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_one_reference_arm_reproduces_and_then_is_a_no_op(tmp_path):
    _checkout_copy(tmp_path)
    first = _dvc(["repro", "evaluate@ref_boulware"], tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    out = tmp_path / "outputs/demo"
    seller = json.loads((out / "select/ref_boulware/seller.json").read_text())
    assert seller["seller"].startswith("scripted:")
    assert json.loads((out / "pilot/ref_boulware.json").read_text())["passed"] is True
    episodes = pd.read_parquet(out / "evaluate/ref_boulware/episodes.parquet")
    scenarios = pd.read_parquet(out / "scenarios/evaluation.parquet")
    assert len(episodes) == len(scenarios) == 144
    assert (episodes["outcome"] != "error").all()
    assert set(map(tuple, episodes[["domain", "seed", "buyer"]].values)) == \
        set(map(tuple, scenarios[["domain", "seed", "buyer"]].values))
    second = _dvc(["repro", "evaluate@ref_boulware"], tmp_path)
    assert second.returncode == 0 and "Running stage" not in second.stdout, second.stdout[-2000:]
