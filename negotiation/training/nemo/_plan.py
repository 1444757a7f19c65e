"""Which training run an arm names, how many steps it trains, and where its files go.

Arms read checkpoints of runs (``arms.yaml: run``); several arms may read one run, and a
continuation run (``parent_run``) may continue a run no arm reads (the paper's initial runs).
``plan_run`` accepts an arm name or a run name and resolves the run's size, learning-rate
multiple, step budget and, for a continuation, the parent step it branches from: by default the
parent's final checkpoint (``read_rule.continuation_branch``), i.e. ``training.initial_steps``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, Recipe
from negotiation.study import Study
from negotiation.training import DEFAULT_TRACKING_URI

__all__ = ["RunPaths", "RunPlan", "plan_run", "resolve_tracking_uri"]


class RunPlan(BaseModel):
    """One training run, resolved from the protocol and the arm matrix."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    version: Literal[1] = 1
    """Record format version."""
    study: str
    """Study name."""
    arm: str | None
    """Arm named on the command line, or ``None`` when a run was named directly."""
    run: str
    """Training run name (output folder, MLflow run name)."""
    size: str
    """Key into the protocol's ``sizes``."""
    lr_multiple: float = Field(gt=0)
    """Multiple of the shared learning rate (scales peak and floor)."""
    parent_run: str | None
    """Run this one continues, or ``None`` for an initial run."""
    parent_step: int | None
    """Combined step of the parent checkpoint a continuation starts from."""
    steps: int = Field(gt=0)
    """Optimizer steps this run trains."""
    step_offset: int = Field(ge=0)
    """Combined step of this run's step 0 (0 for an initial run, ``parent_step`` otherwise)."""
    seed: int = Field(ge=0)
    """Training seed (NeMo-RL ``grpo.seed`` and the buyer mixture order)."""


def _runs(arms: Mapping[str, Arm]) -> dict[str, Arm]:
    """Each run name (read by an arm, or only continued) with an arm that describes it."""
    runs: dict[str, Arm] = {}
    for arm in arms.values():
        if arm.run is not None:
            runs.setdefault(arm.run, arm)
    for arm in arms.values():
        if arm.parent_run is not None and arm.parent_run not in runs:
            runs[arm.parent_run] = arm.defining(arm.parent_run)
    return runs


def _parent_step(recipe: Recipe, run: str, requested: int | None) -> int:
    step = recipe.initial_steps if requested is None else requested
    if not 0 < step < recipe.combined_steps or step % recipe.checkpoint_every:
        raise ConfigError(f"--parent-step: run {run!r} cannot branch at step {step}: need a checkpoint step "
                          f"(multiple of {recipe.checkpoint_every}) in 1..{recipe.combined_steps - 1}")
    return step


def plan_run(study: Study, name: str, *, seed: int = 0, parent_step: int | None = None,
             arms: Mapping[str, Arm] | None = None) -> RunPlan:
    """The run that arm (or run) ``name`` of ``study`` trains; ``arms`` default the frozen
    matrix (pass frozen plus registry-added arms to train an added arm's run)."""
    arms_file = f"protocol/{study.name}/arms.yaml"
    arms = dict(study.arms if arms is None else arms)
    runs = _runs(arms)
    if name in arms:
        arm = arms[name]
        if arm.kind != "trained" or arm.run is None:
            raise ConfigError(f"{arms_file}:arms.{name}.kind: a {arm.kind} arm has no training run")
        run_name, arm_name = arm.run, name
    elif name in runs:
        run_name, arm_name = name, None
    else:
        raise ConfigError(f"{arms_file}:arms: no arm or run {name!r}; trained arms: "
                          f"{sorted(a for a, v in arms.items() if v.kind == 'trained')}; runs: {sorted(runs)}")
    described = runs[run_name]
    recipe = study.run_protocol(run_name).recipe_for(described.size)  # gpu_training for a GPU-profile size
    if described.parent_run is None:
        if parent_step is not None:
            raise ConfigError(f"--parent-step: run {run_name!r} is an initial run, not a continuation")
        steps, offset, branch = recipe.initial_steps, 0, None
    else:
        branch = _parent_step(recipe, run_name, parent_step)
        steps, offset = recipe.combined_steps - branch, branch
    return RunPlan(study=study.name, arm=arm_name, run=run_name, size=described.size,
                   lr_multiple=described.lr_multiple, parent_run=described.parent_run,
                   parent_step=branch, steps=steps, step_offset=offset, seed=seed)


class RunPaths(BaseModel):
    """Folders of one run under the study's training root (absolute: Ray workers share them)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    root: Path
    """The study's training root, e.g. ``outputs/<study>/train``."""
    run: str
    """Run name."""

    @property
    def run_dir(self) -> Path:
        return self.root / self.run

    @property
    def config(self) -> Path:
        """The generated GRPO YAML."""
        return self.run_dir / "grpo.yaml"

    @property
    def checkpoints(self) -> Path:
        """NeMo-RL ``checkpointing.checkpoint_dir``: ``step_N/`` folders (local step numbers)."""
        return self.run_dir / "checkpoints"

    @property
    def logs(self) -> Path:
        """NeMo-RL ``logger.log_dir``."""
        return self.run_dir / "logs"

    def step_dir(self, step: int) -> Path:
        return self.checkpoints / f"step_{step}"

    @classmethod
    def for_run(cls, root: Path, run: str) -> "RunPaths":
        return cls(root=Path(root).expanduser().resolve(), run=run)


def resolve_tracking_uri(environ: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` or the default store, with a relative SQLite path made absolute.

    NeMo-RL's logger may run in a Ray worker with another working directory, and MLflow's file
    store breaks on its ``/``-separated metric names, so only database or server URIs are used.
    """
    uri = (environ if environ is not None else os.environ).get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        path = Path(uri[len(prefix):])
        return prefix + str((Path(cwd or Path.cwd()) / path).resolve())
    if uri.startswith(("file:", "./", "/")) or "://" not in uri:
        raise ConfigError(f"MLFLOW_TRACKING_URI: {uri!r} is a file store; NeMo-RL's metric names need a "
                          "database (sqlite:///...) or a tracking server (http://...)")
    return uri
