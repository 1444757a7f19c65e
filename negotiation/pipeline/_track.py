"""``track`` stage: one MLflow evaluation run per evaluated arm, logged once per table content.

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
from negotiation.registry import ResultsLayout
from negotiation.tracking import experiment_id, retrying


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _logged(study: str) -> dict[tuple[str, str], str]:
    """``(arm, tables_sha256) -> run id`` of the evaluation runs already in the store."""
    from mlflow.tracking import MlflowClient

    from negotiation.tracking import store_lock, tracking_uri

    uri = tracking_uri()
    with store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
    exp = experiment_id(client, study)
    runs = retrying(lambda: client.search_runs([exp], "tags.phase = 'evaluation'", max_results=5000))
    return {(r.data.tags.get("arm", ""), r.data.tags.get("tables_sha256", "")): r.info.run_id for r in runs}


def run_track(study: str, results_dir: Path) -> dict[str, Any]:
    """Log every evaluated arm not yet logged with its current table; return run ids by arm."""
    layout = ResultsLayout(Path(results_dir))
    logged = _logged(study)
    runs: dict[str, Any] = {}
    for arm in build_plan(study)["plan"]["arms"]:
        out = layout.dir / "evaluate" / arm
        table = out / "episodes.parquet"
        if not table.exists():
            continue
        digest = _sha256(table)
        run_id = logged.get((arm, digest))
        if run_id is None:
            metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
            seller = json.loads(layout.seller(arm).read_text(encoding="utf-8"))["seller"]
            run_id = log_evaluation_run(study, arm, seller, out, metrics, layout, digest)
        runs[arm] = {"run_id": run_id, "tables_sha256": digest}
    return {"study": study, "evaluation_runs": runs}


__all__ = ["run_track"]
