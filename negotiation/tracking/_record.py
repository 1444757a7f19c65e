"""A run recorded to a file while it runs and logged to MLflow later, by another process.

Logging live costs each process an MLflow import and a store opening (about 4 s on 2 cores, an
eighth of a demo ``train@`` stage, paid thirteen times per ``dvc repro``). A ``RecordingTracker``
takes the same calls as an ``MlflowTracker`` but keeps them, and ``finish`` writes them as one JSON
record (``RECORD_VERSION``); ``log_recorded_run`` later creates the MLflow run from it, so the
``track`` stage logs every training run of a study in the one process that imports MLflow.

The record holds no time stamps or run ids, so a rerun that trains the same weights writes the
same bytes (and DVC reruns nothing downstream of it). The run's wall-clock start and end go to a
sidecar, ``mlflow_run.times.json`` (``TIMES_FILE``, in ``.dvcignore``), with the SHA-256 of the
record they belong to; the logged run carries them, so its duration in the MLflow UI is the
training's own, not the logging's.
"""

from __future__ import annotations

import hashlib
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
TIMES_FILE = "mlflow_run.times.json"
"""Sidecar of the record: ``start_ms``, ``end_ms`` (Unix epoch milliseconds) and ``record_sha256``."""
_MAX_BATCH = 900  # log_batch accepts at most 1000 metrics per call


class RecordingTracker(NullTracker):
    """An MLflow run kept in memory and written to ``path`` when it finishes."""

    def __init__(self, path: str | Path, run_name: str, params: Mapping[str, str], tags: Mapping[str, str]):
        self.path = Path(path)
        self.record: dict[str, Any] = {
            "version": RECORD_VERSION, "run_name": run_name, "params": {k: str(v) for k, v in params.items()},
            "tags": {**source_tags(), **{k: str(v) for k, v in tags.items()}}, "metrics": [], "status": None}
        self.start_ms = _now_ms()
        self.step_ms: dict[int, int] = {}

    def log_step(self, step: int, metrics: Mapping[str, float]) -> None:
        self.record["metrics"].append([step, {k: float(v) for k, v in metrics.items()}])
        self.step_ms.setdefault(step, _now_ms())

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.record["tags"].update({k: str(v) for k, v in tags.items()})

    def finish(self, status: str = "FINISHED") -> None:
        self.record["status"] = status
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.record, indent=1, sort_keys=True) + "\n"
        self.path.write_text(text, encoding="utf-8")
        times = {"start_ms": self.start_ms, "end_ms": _now_ms(), "step_ms": {str(k): v for k, v in self.step_ms.items()},
                 "record_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        (self.path.parent / TIMES_FILE).write_text(json.dumps(times, indent=1) + "\n", encoding="utf-8")


def _now_ms() -> int:
    return int(time.time() * 1000)


def read_run_times(record_path: str | Path) -> dict[str, Any] | None:
    """The sidecar times of the record at ``record_path`` when they belong to its current bytes
    (a run restored from the DVC cache may sit beside the times of another run), else ``None``."""
    record_path = Path(record_path)
    times_path = record_path.parent / TIMES_FILE
    try:
        times = json.loads(times_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if times.get("record_sha256") != hashlib.sha256(record_path.read_bytes()).hexdigest():
        return None
    return times


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


def log_recorded_run(client: Any, experiment: str, record: Mapping[str, Any], tags: Mapping[str, str],
                     times: Mapping[str, Any] | None = None) -> str:
    """Create the MLflow run of ``record`` in ``experiment`` (its tags updated with ``tags``), log
    its params and per-step metrics in batches and its status; return the run id. With ``times``
    (``read_run_times``) the run starts and ends when the training did and each step's metrics
    carry the time the step was recorded."""
    from mlflow.entities import Metric, Param

    exp = experiment_id(client, experiment)
    all_tags = {**record["tags"], **{k: str(v) for k, v in tags.items()}}
    times = times or {}
    run = retrying(lambda: client.create_run(exp, run_name=record["run_name"], tags=all_tags,
                                             start_time=times.get("start_ms")))
    run_id = run.info.run_id
    retrying(lambda: client.log_text(run_id, frozen_requirements(), "environment/pip-freeze.txt"))
    params = [Param(k, v[:6000]) for k, v in record["params"].items()]
    for i in range(0, len(params), 100):
        chunk = params[i:i + 100]
        retrying(lambda: client.log_batch(run_id, params=chunk))
    now, step_ms = int(time.time() * 1000), times.get("step_ms") or {}
    metrics = [Metric(k, v, int(step_ms.get(str(step), now)), step)
               for step, values in record["metrics"] for k, v in values.items()]
    for i in range(0, len(metrics), _MAX_BATCH):
        chunk = metrics[i:i + _MAX_BATCH]
        retrying(lambda: client.log_batch(run_id, metrics=chunk))
    retrying(lambda: client.set_terminated(run_id, status=record["status"] or "FAILED", end_time=times.get("end_ms")))
    return run_id


__all__ = ["RECORD_FILE", "RECORD_VERSION", "TIMES_FILE", "RecordingTracker", "log_recorded_run", "read_recorded_run",
           "read_run_times"]
