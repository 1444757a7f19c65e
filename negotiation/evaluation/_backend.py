"""Where a cell's episodes are played: in this process (``local``) or on a Ray cluster (``ray``).

The backend changes how fast a cell runs, never what it stores: with either, the driver process
plans the cell from its results store (the same resume rule), writes every finished episode as
one shard and compacts the same tables. It is a run-time knob (``evaluate.backend`` in
params.yaml, ``$NEGO_EVAL_BACKEND`` wins), never a DVC stage param, so switching reruns nothing.
The Ray cluster is the one ``$RAY_ADDRESS`` names (``ray start --head`` prints it); without it a
Ray instance is started on this machine for the run (docs/scale-out.md).

This module imports no Ray: the local path never loads it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BackendKind = Literal["local", "ray"]
BACKENDS: tuple[BackendKind, ...] = ("local", "ray")


class ExecutionBackend(BaseModel):
    """How a cell's episodes are executed (never part of what they are)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Record format version."""
    kind: BackendKind = "local"
    """``local``: asyncio tasks in this process; ``ray``: episode workers (Ray actors) on a cluster."""
    workers: int | None = Field(default=None, gt=0)
    """Ray: episode workers (actors of one CPU each); ``None``: the cluster's CPUs, at most one per
    task of the cell. Each worker keeps ``concurrency`` episodes in flight."""
    episodes_per_task: int | None = Field(default=None, gt=0)
    """Ray: episodes handed to a worker at a time (one buyer's consecutive scenarios); ``None``:
    about four tasks per worker, so a lost worker costs little and the load stays balanced."""
    max_worker_losses: int = Field(default=8, ge=0)
    """Ray: workers that may die (node lost, OOM kill, SIGKILL) before the run stops; each loss
    replays only the episodes of its task that had not come back."""


def parse_backend(kind: str, workers: int | None = None, *, where: str = "evaluate.backend") -> ExecutionBackend:
    """An ``ExecutionBackend`` from the knob's text; a bad value is a ``ConfigError`` naming ``where``."""
    from negotiation.errors import ConfigError

    if kind not in BACKENDS:
        raise ConfigError(f"{where}: expected one of {', '.join(BACKENDS)}, got {kind!r}")
    return ExecutionBackend(kind=kind, workers=workers)  # type: ignore[arg-type]
