"""MLflow runs of the study: training curves, evaluation and analysis runs, logged cheaply.

One experiment per study, named ``<prefix>/<study>`` (``experiment_name``). Runs carry MLflow's
own source tags and the interpreter's ``pip freeze``. Params and tags go in at creation, per-step
metrics are buffered and written with ``MlflowClient.log_batch`` (one database transaction per
batch instead of one per value). The tracking URI comes from ``MLFLOW_TRACKING_URI``, default
``sqlite:///mlflow.db``; mlflow is imported only when a run is started.

Stages may write to the embedded SQLite store at the same time (``dvc exp run --jobs``, ad hoc
``nego evaluate`` beside ``dvc repro``): SQLite then answers "database is locked" and two
processes may race to create the study's experiment. Both are retried here, so no run is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TypeVar

T = TypeVar("T")

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT_PREFIX = "negotiation"
EXPERIMENT_PREFIX_ENV = "NEGO_EXPERIMENT_PREFIX"
_MAX_BATCH = 900  # log_batch accepts at most 1000 metrics per call


def tracking_uri() -> str:
    """The tracking URI of the environment, else the embedded SQLite store."""
    return os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def experiment_name(study: str) -> str:
    """``<prefix>/<study>``: the prefix (``$NEGO_EXPERIMENT_PREFIX``, set by the stages from
    ``params.yaml`` ``tracking.experiment_prefix``; default ``negotiation``) keeps two projects'
    ``demo`` studies apart on a shared server."""
    prefix = os.environ.get(EXPERIMENT_PREFIX_ENV, "").strip().strip("/") or DEFAULT_EXPERIMENT_PREFIX
    return f"{prefix}/{study}"


def source_tags() -> dict[str, str]:
    """MLflow's own source tags (the UI's "Source" and "Version" columns): entry script and commit."""
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if sys.argv and sys.argv[0]:
        try:
            script = Path(sys.argv[0]).resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            pass
    return {"mlflow.source.name": script, "mlflow.source.type": "LOCAL",
            "mlflow.source.git.commit": git_commit()}


@functools.lru_cache(maxsize=1)
def frozen_requirements() -> str:
    """``pip freeze`` of this interpreter (name==version of every installed distribution)."""
    from importlib import metadata

    pins = {f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"]}
    return "\n".join(sorted(pins, key=str.lower)) + "\n"


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


def _is_transient(exc: Exception) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "already exists" in text or "unique constraint" in text


def retrying(call: Callable[[], T], attempts: int = 8, first_wait: float = 0.05) -> T:
    """Run ``call``, retrying SQLite lock errors and creation races with exponential backoff."""
    wait = first_wait
    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:  # mlflow wraps sqlalchemy errors in its own MlflowException
            if attempt == attempts - 1 or not _is_transient(exc):
                raise
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive lock beside an embedded SQLite store while it may be created or migrated.

    MLflow creates its tables on first use; two processes doing so at once fail with "table
    ... already exists". Other URIs (servers) need no lock.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri[len("sqlite:///"):])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def experiment_id(client: Any, name: str) -> str:
    """Id of the experiment ``name``, created if missing (safe when processes race)."""
    def get_or_create() -> str:
        found = client.get_experiment_by_name(name)
        return found.experiment_id if found else client.create_experiment(name)
    with store_lock(client.tracking_uri):
        return retrying(get_or_create)


NOTE_TAG = "mlflow.note.content"
"""The experiment tag MLflow's UI shows as the experiment's description."""


def experiment_description(study: str) -> str:
    """What the study's experiment holds and how to show one kind of run (Markdown)."""
    return (f"Runs of the `{study}` study, each tagged with its kind: `phase` = `training` (one per training run: "
            "`train/*` curves per step, `validation/score`), `evaluation` (one per arm: `eval/*` metrics, episode and "
            "turn tables, the seller as an MLflow model) or `analysis` (the report and contrasts). To see one kind, "
            "search runs with `tags.phase = 'training'` (or `'evaluation'`). Every arm's seller is a registered "
            f"model `<prefix>.{study}.<arm>`; its alias `@read` is the checkpoint the arm is evaluated with.")


def describe_experiment(client: Any, exp_id: str, text: str) -> None:
    """Set the experiment's description (its ``mlflow.note.content`` tag) unless it already reads ``text``."""
    current = retrying(lambda: client.get_experiment(exp_id)).tags.get(NOTE_TAG)
    if current != text:
        retrying(lambda: client.set_experiment_tag(exp_id, NOTE_TAG, text))


class MlflowTracker(NullTracker):
    """One MLflow run; metrics are buffered and written in batches."""

    def __init__(self, experiment: str, run_name: str, params: Mapping[str, str],
                 tags: Mapping[str, str], uri: str | None = None):
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        uri = uri or tracking_uri()
        with store_lock(uri):  # the client creates and migrates the store's tables
            self.client = MlflowClient(tracking_uri=uri)
        exp_id = experiment_id(self.client, experiment)
        all_tags = {**source_tags(), **{k: str(v) for k, v in tags.items()}}
        run = retrying(lambda: self.client.create_run(exp_id, run_name=run_name, tags=all_tags))
        self.run_id = run.info.run_id
        # What was installed, so a run can be re-created (the lock file pins the same for `make`).
        retrying(lambda: self.client.log_text(self.run_id, frozen_requirements(), "environment/pip-freeze.txt"))
        self._buffer: list[Any] = []
        params_list = [Param(k, v[:6000]) for k, v in params.items()]
        for i in range(0, len(params_list), 100):
            chunk = params_list[i:i + 100]
            retrying(lambda: self.client.log_batch(self.run_id, params=chunk))
        self._tag_cls = RunTag

    def log_step(self, step: int, metrics: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._buffer.extend(Metric(k, float(v), now, step) for k, v in metrics.items())

    def flush(self) -> None:
        while self._buffer:
            chunk, self._buffer = self._buffer[:_MAX_BATCH], self._buffer[_MAX_BATCH:]
            retrying(lambda: self.client.log_batch(self.run_id, metrics=chunk))

    def set_tags(self, tags: Mapping[str, str]) -> None:
        batch = [self._tag_cls(k, str(v)) for k, v in tags.items()]
        retrying(lambda: self.client.log_batch(self.run_id, tags=batch))

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        """Copy a file or folder into the run's artifact store."""
        target = Path(path)
        if target.is_dir():
            retrying(lambda: self.client.log_artifacts(self.run_id, str(target), artifact_path))
        else:
            retrying(lambda: self.client.log_artifact(self.run_id, str(target), artifact_path))

    def finish(self, status: str = "FINISHED") -> None:
        self.flush()
        retrying(lambda: self.client.set_terminated(self.run_id, status=status))
