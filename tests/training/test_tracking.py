"""MLflow curves of a tiny run: one run per arm, recipe params, tags, every step's metrics."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from negotiation.errors import ConfigError
from negotiation.training import DEFAULT_TRACKING_URI, read_training_info, tracking_uri, train_arm
from negotiation.tracking import RECORD_FILE, flatten, git_commit, log_recorded_run, read_recorded_run
from tests.training.tiny_setup import ENV, tiny_config

CURVES = ["train/reward", "train/kl_penalty", "train/entropy", "train/lr", "train/grad_norm"]


def test_tracking_uri_from_environment(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri() == DEFAULT_TRACKING_URI == "sqlite:///mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert tracking_uri() == "http://tracking:5000"


def test_flatten_nested_params():
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == {"a.b": "1", "a.c": "[1, 2]", "d": "None"}


def _checkout(path: Path) -> str:
    """A git repository with one commit; its commit id as git reports it on creation."""
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    return (path / ".git" / subprocess.run([*git, "symbolic-ref", "HEAD"], check=True, capture_output=True,
                                            text=True).stdout.strip()).read_text().strip()


def test_git_commit_is_the_checkout_s_head_and_unknown_outside_one(tmp_path):
    head = _checkout(tmp_path / "repo")
    assert len(head) == 40 and git_commit(tmp_path / "repo") == head
    (tmp_path / "bare").mkdir()
    assert git_commit(tmp_path / "bare") == "unknown"


def test_one_run_per_arm_with_curves_and_tags(tmp_path, monkeypatch):
    head = _checkout(tmp_path / "checkout")
    monkeypatch.chdir(tmp_path / "checkout")  # runs are tagged with the commit of the working checkout
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    parent = train_arm(tiny_config(), ENV, tmp_path / "parent")
    cont = train_arm(tiny_config(steps=2, arm="w8_cont", parent=tmp_path / "parent" / "step_3",
                                 parent_arm="w8"), ENV, tmp_path / "cont")
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("negotiation/tiny")
    runs = {r.data.tags["arm"]: r for r in client.search_runs([exp.experiment_id])}
    assert sorted(runs) == ["w8", "w8_cont"]
    run = runs["w8"]
    assert run.info.run_id == parent.mlflow_run_id and run.info.status == "FINISHED"
    tags = run.data.tags
    assert (tags["study"], tags["size"], tags["lr_multiple"], tags["protocol_hash"]) == ("tiny", "8", "1.0", "abc123")
    assert tags["git_commit"] == head and tags["parent_run"] == ""
    # MLflow's own source tags (the UI's Source and Version columns) and the interpreter's pip freeze.
    assert tags["mlflow.source.git.commit"] == head and tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.source.name"]
    freeze = client.download_artifacts(run.info.run_id, "environment/pip-freeze.txt", str(tmp_path))
    assert any(line.startswith("mlflow==") for line in Path(freeze).read_text().splitlines())
    assert tags["checkpoints"].split() == [str(tmp_path / "parent" / f"step_{s}") for s in (0, 2, 3)]
    params = run.data.params
    assert params["recipe.group_size"] == "3" and params["recipe.kl.coefficient"] == "0.04"
    assert params["arm.arch.width"] == "8" and params["env.accept_applies_terms"] == "True"
    for key in CURVES:
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == [1, 2, 3]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "validation/score")] == [0, 2, 3]
    # The continuation: tagged with its parent run, curves at combined steps 3..5.
    child = runs["w8_cont"]
    assert child.data.tags["parent_run"] == parent.mlflow_run_id and child.data.tags["parent_arm"] == "w8"
    assert [m.step for m in client.get_metric_history(child.info.run_id, "train/lr")] == [4, 5]
    assert [m.step for m in client.get_metric_history(child.info.run_id, "validation/score")] == [3, 5]
    assert read_training_info(tmp_path / "cont" / "step_2").mlflow_run_id == cont.mlflow_run_id



def test_a_recorded_run_logs_what_the_live_run_logs(tmp_path, monkeypatch):
    """``record=True`` opens no MLflow store; logging the record later gives the live run's params,
    tags and metric histories (the ``track`` stage sets the parent link and its own tags)."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    live = train_arm(tiny_config(), ENV, tmp_path / "live")
    recorded = train_arm(tiny_config(), ENV, tmp_path / "recorded", record=True)
    assert recorded.mlflow_run_id is None and read_training_info(tmp_path / "recorded" / "step_3").mlflow_run_id is None
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("negotiation/tiny").experiment_id
    assert len(client.search_runs([exp])) == 1  # recording logged nothing
    record = read_recorded_run(tmp_path / "recorded" / RECORD_FILE)
    run_id = log_recorded_run(client, "negotiation/tiny", record, {"dvc_stage": "train@w8"})
    a, b = client.get_run(live.mlflow_run_id), client.get_run(run_id)
    assert a.data.params == b.data.params and b.info.status == "FINISHED"
    ignore = {"checkpoints", "dvc_stage", "mlflow.runName"}
    assert {k: v for k, v in a.data.tags.items() if k not in ignore} == \
        {k: v for k, v in b.data.tags.items() if k not in ignore}
    for key in [*CURVES, "validation/score"]:
        assert [(m.step, m.value) for m in client.get_metric_history(a.info.run_id, key)] == \
            [(m.step, m.value) for m in client.get_metric_history(b.info.run_id, key)]


def test_a_bad_record_is_refused_naming_file_and_key(tmp_path):
    path = tmp_path / RECORD_FILE
    path.write_text(json.dumps({"version": 1, "run_name": "w8", "params": {}, "tags": {}, "metrics": []}))
    with pytest.raises(ConfigError, match=f"{RECORD_FILE}:status: missing"):
        read_recorded_run(path)
    path.write_text(json.dumps({"version": 9, "run_name": "w8", "params": {}, "tags": {}, "metrics": [], "status": None}))
    with pytest.raises(ConfigError, match="version: expected 1, got 9"):
        read_recorded_run(path)
    path.write_text("{")
    with pytest.raises(ConfigError, match="line 1: invalid JSON"):
        read_recorded_run(path)
