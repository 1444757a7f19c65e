"""The track stage logs one MLflow evaluation run per arm and table content, never twice."""

from __future__ import annotations

import json

import pandas as pd

from negotiation.pipeline import run_track
from negotiation.study import ResultsLayout


def _arm(layout: ResultsLayout, arm: str, s_values: list[float]) -> None:
    out = layout.dir / "evaluate" / arm
    out.mkdir(parents=True)
    pd.DataFrame({"arm": arm, "S": s_values}).to_parquet(out / "episodes.parquet", index=False)
    (out / "metrics.json").write_text(json.dumps({"S": sum(s_values) / len(s_values), "episodes": len(s_values)}))
    layout.seller(arm).parent.mkdir(parents=True)
    layout.seller(arm).write_text(json.dumps({"seller": "scripted:boulware", "weights_sha256": None}))


def test_each_table_is_logged_once_and_a_changed_table_again(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    layout = ResultsLayout(tmp_path / "outputs/demo")
    _arm(layout, "ref_boulware", [0.5, 0.7])
    first = run_track("demo", layout.dir)["evaluation_runs"]
    assert list(first) == ["ref_boulware"]
    assert run_track("demo", layout.dir)["evaluation_runs"] == first  # unchanged: no new run
    pd.DataFrame({"arm": "ref_boulware", "S": [0.1, 0.2]}).to_parquet(
        layout.dir / "evaluate/ref_boulware/episodes.parquet", index=False)
    changed = run_track("demo", layout.dir)["evaluation_runs"]["ref_boulware"]
    assert changed["run_id"] != first["ref_boulware"]["run_id"]

    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("negotiation/demo").experiment_id])
    assert len(runs) == 2 and {r.data.tags["dvc_stage"] for r in runs} == {"evaluate@ref_boulware"}
    assert {r.data.metrics["eval/S"] for r in runs} == {0.6}  # metrics.json was not rewritten here


def test_each_arm_is_a_registered_model_with_its_seller_and_scenarios_as_input(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("NEGO_EXPERIMENT_PREFIX", "lab-a")
    layout = ResultsLayout(tmp_path / "outputs/demo")
    _arm(layout, "ref_boulware", [0.5, 0.7])
    (layout.dir / "scenarios").mkdir(parents=True)
    pd.DataFrame({"domain": ["used_car"], "seed": [5_000_000]}).to_parquet(layout.dir / "scenarios/evaluation.parquet")
    logged = run_track("demo", layout.dir)["evaluation_runs"]["ref_boulware"]
    assert logged["registered_model"] == "lab-a.demo.ref_boulware" and logged["model_version"] == "1"
    pd.DataFrame({"arm": "ref_boulware", "S": [0.1, 0.2]}).to_parquet(
        layout.dir / "evaluate/ref_boulware/episodes.parquet", index=False)
    assert run_track("demo", layout.dir)["evaluation_runs"]["ref_boulware"]["model_version"] == "1"  # same seller

    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    (version,) = client.search_model_versions("name = 'lab-a.demo.ref_boulware'")
    assert version.run_id == logged["run_id"] and version.source == f"runs:/{logged['run_id']}/model"
    assert version.tags["dvc_path"].endswith("select/ref_boulware/seller.json")
    assert version.tags["protocol_hash"] and version.tags["checkpoint_sha256"].startswith("none")
    assert "seller/seller.json" in [a.path for a in client.list_artifacts(logged["run_id"], "seller")]
    run = client.get_run(logged["run_id"])
    assert client.get_experiment(run.info.experiment_id).name == "lab-a/demo"
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.name == "demo-evaluation-scenarios"
    assert {t.key: t.value for t in dataset.tags}["mlflow.data.context"] == "evaluation"


def test_recorded_training_runs_are_logged_once_parents_first(tmp_path, monkeypatch):
    """The demo's train@ stages record their MLflow runs; track logs each once per record, a
    continuation tagged with its parent's run id."""
    from negotiation.tracking import RECORD_FILE, TIMES_FILE, RecordingTracker

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    layout = ResultsLayout(tmp_path / "outputs/demo")
    for run, parent in (("w64_shared_cont", "w64_shared_init"), ("w64_shared_init", "")):  # child written first
        tracker = RecordingTracker(layout.train(run) / RECORD_FILE, run, {"recipe.group_size": "8"},
                                   {"arm": run, "phase": "training", "parent_run": "", "parent_arm": parent})
        tracker.log_step(1, {"train/reward": 0.25})
        tracker.start_ms -= 60_000  # a minute of training
        tracker.finish()
    first = run_track("demo", layout.dir)["training_runs"]
    assert sorted(first) == ["w64_shared_cont", "w64_shared_init"]
    assert run_track("demo", layout.dir)["training_runs"] == first  # unchanged records: no new run

    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    runs = {r.data.tags["arm"]: r for r in client.search_runs(
        [client.get_experiment_by_name("negotiation/demo").experiment_id], "tags.phase = 'training'")}
    assert sorted(runs) == sorted(first)
    child, parent = runs["w64_shared_cont"], runs["w64_shared_init"]
    assert child.data.tags["parent_run"] == parent.info.run_id == first["w64_shared_init"]["run_id"]
    assert child.data.tags["dvc_stage"] == "train@w64_shared_cont" and child.data.metrics["train/reward"] == 0.25
    assert child.data.params["recipe.group_size"] == "8" and child.info.status == "FINISHED"
    times = json.loads((layout.train("w64_shared_cont") / TIMES_FILE).read_text())  # the training's own clock
    assert (child.info.start_time, child.info.end_time) == (times["start_ms"], times["end_ms"])
    (metric,) = client.get_metric_history(child.info.run_id, "train/reward")
    assert metric.timestamp == times["step_ms"]["1"]


def test_an_unfinished_evaluation_run_is_replaced_not_taken_as_logged(tmp_path, monkeypatch):
    """SIGKILL in the middle of track left the run RUNNING with no metrics: the rerun logs it again."""
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    layout = ResultsLayout(tmp_path / "outputs/demo")
    _arm(layout, "ref_boulware", [0.5, 0.7])
    first = run_track("demo", layout.dir)["evaluation_runs"]["ref_boulware"]
    client = MlflowClient()
    for status in ("RUNNING", "FAILED", "KILLED"):
        run_id = client.create_run(client.get_run(first["run_id"]).info.experiment_id,
                                   tags=client.get_run(first["run_id"]).data.tags).info.run_id
        client.delete_run(first["run_id"])  # only the unfinished one is left, as after a SIGKILL
        if status != "RUNNING":
            client.set_terminated(run_id, status)
        again = run_track("demo", layout.dir)["evaluation_runs"]["ref_boulware"]
        assert again["run_id"] != run_id and again["tables_sha256"] == first["tables_sha256"]
        fresh = client.get_run(again["run_id"])
        assert fresh.info.status == "FINISHED" and fresh.data.metrics["eval/S"] == 0.6
        assert client.get_run(run_id).info.lifecycle_stage == "deleted"
        first = again
