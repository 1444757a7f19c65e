"""``track`` stage: the study's MLflow runs, each logged once per content: one training run per
recorded ``train@<run>`` (its ``mlflow_run.json``), one evaluation run per evaluated arm, and the
arm's selected seller as a version of its registered model (once per seller record).

Logging from each ``train@``/``evaluate@`` process would import MLflow and open the store once per
process (about 4 s each on 2 cores: over a minute and a half of a demo ``dvc repro``); one stage
does it once. An evaluation run is tagged with the SHA-256 of the arm's episode table and a
training run with that of its record, so re-running the stage after one arm changed logs that arm
only, and an unchanged one never gets a duplicate run. A run the stage did not log to the end (a
SIGKILL left it RUNNING, without metrics) does not count: it is deleted and logged again. A continuation's ``parent_run`` tag is the
run id logged here for its parent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from negotiation.pipeline._evaluate import log_evaluation_run
from negotiation.pipeline._plan import build_plan
from negotiation.study import ResultsLayout, Study, as_study
from negotiation.tracking import (
    READ_ALIAS, RECORD_FILE, describe_experiment, experiment_description, experiment_id, experiment_name,
    log_recorded_run, log_seller_model, read_recorded_run, read_run_times, register_seller, registered_model_name,
    retrying,
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _client() -> Any:
    from mlflow.tracking import MlflowClient

    from negotiation.tracking import store_lock, tracking_uri

    uri = tracking_uri()
    with store_lock(uri):
        return MlflowClient(tracking_uri=uri)


COMPLETE_STATUS = {"evaluation": ("FINISHED",), "training": ("FINISHED", "FAILED", "KILLED")}
"""Statuses of a run this stage logged to the end, by phase: an evaluation run is FINISHED as its
last step (``tracker.finish``); a training run ends with its training's recorded status, which
may be FAILED or KILLED. Anything else (RUNNING: the stage was killed while logging it) is an
unfinished run, replaced, never taken as logged."""


def _logged(client: Any, study: str, phase: str = "evaluation", key: str = "tables_sha256") -> dict[tuple[str, str], str]:
    """``(arm, <key> tag) -> run id`` of the ``phase`` runs logged to the end; an unfinished run
    (see ``COMPLETE_STATUS``: a SIGKILL of the stage left it without its metrics or artifacts)
    is deleted, so that its content is logged again as a new run."""
    exp = experiment_id(client, experiment_name(study))
    runs = retrying(lambda: client.search_runs([exp], f"tags.phase = '{phase}'", max_results=5000))
    logged: dict[tuple[str, str], str] = {}
    for run in runs:
        if run.info.status in COMPLETE_STATUS[phase]:
            logged[(run.data.tags.get("arm", ""), run.data.tags.get(key, ""))] = run.info.run_id
        else:
            retrying(lambda run_id=run.info.run_id: client.delete_run(run_id))
    return logged


def _parents_first(runs: dict[str, dict[str, Any]]) -> list[str]:
    """The plan's runs, each after the run it continues (``parent``)."""
    order: list[str] = []

    def visit(run: str) -> None:
        parent = runs[run].get("parent") or ""
        if parent in runs and parent not in order:
            visit(parent)
        if run not in order:
            order.append(run)
    for run in runs:
        visit(run)
    return order


def _log_training(client: Any, study: str, layout: ResultsLayout, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Log every recorded training run not yet logged with its current record."""
    logged = _logged(client, study, "training", "record_sha256")
    done: dict[str, Any] = {}
    for run in _parents_first(runs):
        path = layout.train(run) / RECORD_FILE
        if not path.exists():  # trained elsewhere, or by a trainer that logs live
            continue
        digest = _sha256(path)
        run_id = logged.get((run, digest))
        if run_id is None:
            parent = runs[run].get("parent") or ""
            tags = {"record_sha256": digest, "dvc_stage": f"train@{run}",
                    "parent_run": done.get(parent, {}).get("run_id", "")}
            run_id = log_recorded_run(client, experiment_name(study), read_recorded_run(path), tags,
                                      times=read_run_times(path))
        done[run] = {"run_id": run_id, "record_sha256": digest}
    return done


def _aliases(arm: Any) -> list[str]:
    """``read`` (the version the arm is evaluated with) and the arm's read point by name:
    ``early``/``combined``/... for a trained arm, ``init`` for a base arm."""
    named = arm.read_point or (f"step-{arm.read_step}" if arm.read_step is not None else None)
    extra = {"trained": named, "base": "init"}.get(arm.kind)
    return [READ_ALIAS] + ([extra] if extra else [])


def _register(client: Any, study: Study, arm_name: str, layout: ResultsLayout, run_id: str) -> str:
    """The arm's registered model version: its seller as a loadable MLflow model, tagged with the
    seller record, checkpoint hash and step, DVC paths and protocol hash, aliased ``read``."""
    seller = layout.seller(arm_name)
    record = json.loads(seller.read_text(encoding="utf-8"))
    selection = layout.selection(arm_name)
    chosen = json.loads(selection.read_text(encoding="utf-8")) if selection.exists() else {}
    arm = study.arms.get(arm_name)
    points = ",".join(_aliases(arm)[1:]) if arm else ""
    identity = {"study": study.name, "arm": arm_name, "kind": arm.kind if arm else "unknown",
                "size": (arm.size if arm else None) or "none", "read_point": points or "none",
                "protocol_hash": study.lock_hash}
    tags = {**identity, "seller": record["seller"], "seller_sha256": _sha256(seller),
            "checkpoint_sha256": record.get("weights_sha256") or "none (scripted seller)",
            "dvc_path": seller.as_posix(), "checkpoint_path": chosen.get("checkpoint") or "none",
            "step": str(chosen.get("step", 0 if arm and arm.kind == "base" else "none")),
            "parent_step": str(chosen.get("parent_step") if chosen.get("parent_step") is not None else "none")}

    def log_model() -> str:
        uri, copied = log_seller_model(client, run_id, seller, study.root)
        tags["weights_in_model"] = str(copied).lower()
        return uri
    description = (f"{arm.description}. " if arm else "") + "Each version is the arm's seller as an MLflow pyfunc " \
        f"model: `mlflow.pyfunc.load_model('models:/{registered_model_name(study.name, arm_name)}@read')`" \
        ".predict(views) returns the seller's replies."
    return register_seller(client, registered_model_name(study.name, arm_name), run_id, tags, log_model=log_model,
                           model_tags=identity, aliases=_aliases(arm) if arm else [READ_ALIAS],
                           description=description)


def run_track(study: Study | str, results_dir: Path) -> dict[str, Any]:
    """Log every recorded training run and every evaluated arm not yet logged with its current
    record or table; return run ids by run and by arm."""
    layout = ResultsLayout(Path(results_dir))
    client = _client()
    loaded = as_study(study)
    study = loaded.name
    plan = build_plan(loaded, profile=loaded.results_profile(Path(results_dir)))["plan"]
    describe_experiment(client, experiment_id(client, experiment_name(study)), experiment_description(study))
    training = _log_training(client, study, layout, plan["runs"])
    logged = _logged(client, study)
    runs: dict[str, Any] = {}
    for arm in plan["arms"]:
        table = layout.episodes(arm)
        if not table.exists():
            continue
        digest = _sha256(table)
        run_id = logged.get((arm, digest))
        if run_id is None:
            metrics = json.loads(layout.metrics(arm).read_text(encoding="utf-8"))
            seller = json.loads(layout.seller(arm).read_text(encoding="utf-8"))["seller"]
            run_id = log_evaluation_run(loaded, arm, seller, metrics, layout, digest)
        version = _register(client, loaded, arm, layout, run_id)
        runs[arm] = {"run_id": run_id, "tables_sha256": digest, "registered_model": registered_model_name(study, arm),
                     "model_version": version}
    return {"study": study, "training_runs": training, "evaluation_runs": runs}


__all__ = ["run_track"]
