"""A run recorded to a file while it runs and logged to MLflow later, by another process.

Logging live costs each process an MLflow import and a store opening (about 4 s on 2 cores, an
eighth of a demo ``train@`` stage, paid thirteen times per ``dvc repro``). A ``RecordingTracker``
takes the same calls as an ``MlflowTracker`` but keeps them, and ``finish`` writes them as one JSON
record (``RECORD_VERSION``); ``log_recorded_run`` later creates the MLflow run from it, so the
``track`` stage logs every training run of a study in the one process that imports MLflow.

The record holds no time stamps or run ids, so a rerun that trains the same weights writes the
same bytes (and DVC reruns nothing downstream of it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping

from negotiation.errors import ConfigError
from negotiation.tracking._mlflow import (
    NullTracker, experiment_id, frozen_requirements, retrying, source_tags,
)

RECORD_VERSION = 1
RECORD_FILE = "mlflow_run.json"
"""Name of a run's record in its run folder (``train/<run>/``), where the ``track`` stage finds it."""
_MAX_BATCH = 900  # log_batch accepts at most 1000 metrics per call


class RecordingTracker(NullTracker):
    """An MLflow run kept in memory and written to ``path`` when it finishes."""

    def __init__(self, path: str | Path, run_name: str, params: Mapping[str, str], tags: Mapping[str, str]):
        self.path = Path(path)
        self.record: dict[str, Any] = {
            "version": RECORD_VERSION, "run_name": run_name, "params": {k: str(v) for k, v in params.items()},
            "tags": {**source_tags(), **{k: str(v) for k, v in tags.items()}}, "metrics": [], "status": None}

    def log_step(self, step: int, metrics: Mapping[str, float]) -> None:
        self.record["metrics"].append([step, {k: float(v) for k, v in metrics.items()}])

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.record["tags"].update({k: str(v) for k, v in tags.items()})

    def finish(self, status: str = "FINISHED") -> None:
        self.record["status"] = status
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_recorded_run(path: str | Path) -> dict[str, Any]:
    """A record written by ``RecordingTracker``; ``ConfigError`` names the file and what is wrong."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:line {exc.lineno}: invalid JSON: {exc.msg}") from exc
    missing = [k for k in ("version", "run_name", "params", "tags", "metrics", "status") if k not in record]
    if missing:
        raise ConfigError(f"{path}:{missing[0]}: missing from the recorded MLflow run")
    if record["version"] != RECORD_VERSION:
        raise ConfigError(f"{path}:version: expected {RECORD_VERSION}, got {record['version']!r}")
    return record


def log_recorded_run(client: Any, experiment: str, record: Mapping[str, Any], tags: Mapping[str, str]) -> str:
    """Create the MLflow run of ``record`` in ``experiment`` (its tags updated with ``tags``), log
    its params and per-step metrics in batches and its status; return the run id."""
    from mlflow.entities import Metric, Param

    exp = experiment_id(client, experiment)
    all_tags = {**record["tags"], **{k: str(v) for k, v in tags.items()}}
    run = retrying(lambda: client.create_run(exp, run_name=record["run_name"], tags=all_tags))
    run_id = run.info.run_id
    retrying(lambda: client.log_text(run_id, frozen_requirements(), "environment/pip-freeze.txt"))
    params = [Param(k, v[:6000]) for k, v in record["params"].items()]
    for i in range(0, len(params), 100):
        chunk = params[i:i + 100]
        retrying(lambda: client.log_batch(run_id, params=chunk))
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, step) for step, values in record["metrics"] for k, v in values.items()]
    for i in range(0, len(metrics), _MAX_BATCH):
        chunk = metrics[i:i + _MAX_BATCH]
        retrying(lambda: client.log_batch(run_id, metrics=chunk))
    retrying(lambda: client.set_terminated(run_id, status=record["status"] or "FAILED"))
    return run_id


__all__ = ["RECORD_FILE", "RECORD_VERSION", "RecordingTracker", "log_recorded_run", "read_recorded_run"]
