"""`dvc repro` of one arm in a copy of the checkout: the DVC wiring, the stage scripts and the
results layout end to end (reduced: a scripted reference arm needs no training), then a no-op.
The arm's stages are its own folder's DVC file: ``dvc repro`` of the file reruns it with upstream."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.pipeline.dvc_checkout import checkout_copy as _checkout_copy
from tests.pipeline.dvc_checkout import dvc as _dvc

pytestmark = pytest.mark.slow


ARM_FILE = "pipelines/demo/arms/ref_boulware/dvc.yaml"


def test_one_reference_arm_reproduces_and_then_is_a_no_op(tmp_path):
    _checkout_copy(tmp_path)
    first = _dvc(["repro", ARM_FILE], tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "evaluate@ref_boulware: 144/144 episodes" in first.stdout + first.stderr  # progress, not silence
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
    assert "Running stage 'scenarios'" in first.stdout  # upstream, from the study file
    assert (tmp_path / "pipelines/demo/arms/ref_boulware/dvc.lock").is_file()  # the arm's own lock
    second = _dvc(["repro", ARM_FILE], tmp_path)
    assert second.returncode == 0 and "Running stage" not in second.stdout, second.stdout[-2000:]
    # A run-time knob changes how a stage runs, not its results: no stage goes stale.
    params = tmp_path / "params.yaml"
    params.write_text(params.read_text().replace("concurrency: 16", "concurrency: 32"))
    status = _dvc(["status", f"{ARM_FILE}:evaluate"], tmp_path)
    assert status.returncode == 0 and "up to date" in status.stdout, status.stdout[-2000:]
