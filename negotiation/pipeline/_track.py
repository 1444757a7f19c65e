"""``track`` stage: one MLflow evaluation run per evaluated arm, logged once per table content,
and the arm's selected seller as a version of its registered model (once per seller record).

Logging from each ``evaluate@<arm>`` process would import MLflow and open the store nineteen
times (about a minute of the demo's ten); one stage does it once. A run is tagged with the
SHA-256 of the arm's episode table, so re-running the stage after one arm changed logs that arm
only, and an unchanged arm never gets a duplicate run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from negotiation.pipeline._evaluate import log_evaluation_run
from negotiation.pipeline._plan import build_plan
from negotiation.study import ResultsLayout, protocol_hash
from negotiation.tracking import experiment_id, experiment_name, register_seller, registered_model_name, retrying


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _client() -> Any:
    from mlflow.tracking import MlflowClient

    from negotiation.tracking import store_lock, tracking_uri

    uri = tracking_uri()
    with store_lock(uri):
        return MlflowClient(tracking_uri=uri)


def _logged(client: Any, study: str) -> dict[tuple[str, str], str]:
    """``(arm, tables_sha256) -> run id`` of the evaluation runs already in the store."""
    exp = experiment_id(client, experiment_name(study))
    runs = retrying(lambda: client.search_runs([exp], "tags.phase = 'evaluation'", max_results=5000))
    return {(r.data.tags.get("arm", ""), r.data.tags.get("tables_sha256", "")): r.info.run_id for r in runs}


def _register(client: Any, study: str, arm: str, layout: ResultsLayout, run_id: str) -> str:
    """The arm's registered model version: seller record, checkpoint hash, DVC paths, protocol hash."""
    record = json.loads(layout.seller(arm).read_text(encoding="utf-8"))
    selection = layout.selection(arm)
    checkpoint = json.loads(selection.read_text(encoding="utf-8"))["checkpoint"] if selection.exists() else ""
    tags = {"study": study, "arm": arm, "seller": record["seller"], "seller_sha256": _sha256(layout.seller(arm)),
            "checkpoint_sha256": record.get("weights_sha256") or "none (scripted seller)",
            "dvc_path": layout.seller(arm).as_posix(), "checkpoint_path": checkpoint or "none",
            "protocol_hash": protocol_hash(study)}
    return register_seller(client, registered_model_name(study, arm), run_id, tags)


def run_track(study: str, results_dir: Path) -> dict[str, Any]:
    """Log every evaluated arm not yet logged with its current table; return run ids by arm."""
    layout = ResultsLayout(Path(results_dir))
    client = _client()
    logged = _logged(client, study)
    runs: dict[str, Any] = {}
    for arm in build_plan(study)["plan"]["arms"]:
        table = layout.episodes(arm)
        if not table.exists():
            continue
        digest = _sha256(table)
        run_id = logged.get((arm, digest))
        if run_id is None:
            metrics = json.loads(layout.metrics(arm).read_text(encoding="utf-8"))
            seller = json.loads(layout.seller(arm).read_text(encoding="utf-8"))["seller"]
            run_id = log_evaluation_run(study, arm, seller, metrics, layout, digest)
        version = _register(client, study, arm, layout, run_id)
        runs[arm] = {"run_id": run_id, "tables_sha256": digest, "registered_model": registered_model_name(study, arm),
                     "model_version": version}
    return {"study": study, "evaluation_runs": runs}


__all__ = ["run_track"]
