"""MLflow curves of one training arm, logged cheaply.

One run per training arm in the study's experiment (named after the study). The recipe goes in
as params, the arm's identity as tags, and the per-step metrics are buffered and written with
``MlflowClient.log_batch`` once per checkpoint period and at the end (one database transaction
per batch instead of one per value). The tracking URI comes from ``MLFLOW_TRACKING_URI``,
default ``sqlite:///mlflow.db``; mlflow is imported only when a run is started.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
_MAX_BATCH = 900  # log_batch accepts at most 1000 metrics per call


def tracking_uri() -> str:
    """The tracking URI of the environment, else the embedded SQLite store."""
    return os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def git_commit(repo: Path | None = None) -> str:
    """HEAD of the repository (``unknown`` outside a git checkout), for the run's tags."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                             text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``; lists and tuples as JSON."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(value, default=str)
        else:
            flat[name] = str(value)
    return flat


class NullTracker:
    """Tracking switched off: every call does nothing."""

    run_id: str | None = None

    def log_step(self, step: int, metrics: Mapping[str, float]) -> None:
        """Nothing to record."""

    def flush(self) -> None:
        """Nothing buffered."""

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Nothing to tag."""

    def finish(self, status: str = "FINISHED") -> None:
        """Nothing to close."""


class MlflowTracker(NullTracker):
    """One MLflow run; metrics are buffered and written in batches."""

    def __init__(self, experiment: str, run_name: str, params: Mapping[str, str],
                 tags: Mapping[str, str], uri: str | None = None):
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri or tracking_uri())
        found = self.client.get_experiment_by_name(experiment)
        exp_id = found.experiment_id if found else self.client.create_experiment(experiment)
        run = self.client.create_run(exp_id, run_name=run_name,
                                     tags={k: str(v) for k, v in tags.items()})
        self.run_id = run.info.run_id
        self._buffer: list[Any] = []
        params_list = [Param(k, v[:6000]) for k, v in params.items()]
        for i in range(0, len(params_list), 100):
            self.client.log_batch(self.run_id, params=params_list[i:i + 100])
        self._tag_cls = RunTag

    def log_step(self, step: int, metrics: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._buffer.extend(Metric(k, float(v), now, step) for k, v in metrics.items())

    def flush(self) -> None:
        while self._buffer:
            chunk, self._buffer = self._buffer[:_MAX_BATCH], self._buffer[_MAX_BATCH:]
            self.client.log_batch(self.run_id, metrics=chunk)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.client.log_batch(self.run_id, tags=[self._tag_cls(k, str(v)) for k, v in tags.items()])

    def finish(self, status: str = "FINISHED") -> None:
        self.flush()
        self.client.set_terminated(self.run_id, status=status)
