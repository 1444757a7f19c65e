"""One training run's course, the same for every trainer (demo policy network or causal LM).

A trainer supplies what is its own (the model, the rollouts, the update); this module keeps what
every run does the same way:

1. Seeding block: the run's ``seed`` fixes torch's global stream and one ``numpy`` Generator
   keyed on ``(seed, branch step)`` that draws the rollouts' sample seeds, so a continuation
   draws other seeds than its parent.
2. Start: fresh (its ``step_0/`` is the chain's base, the KL reference) or from a parent
   ``step_N/`` (the chain's base stays the reference; the data resumes at the parent's
   consumed scenarios).
3. Steps ``0 .. N``: validation at step 0 (when the recipe says so), every ``validation_every``
   steps and at the end; ``step_N/`` with ``training_info.json`` every ``checkpoint_every``
   steps and at the end (a continuation's step 0 is its parent's checkpoint); the step's
   warmup-cosine rate (restarted by a continuation); metrics to MLflow at combined steps, so a
   continuation's curves extend its parent's.
4. End: ``curves.csv`` and ``validation.csv``, the checkpoint list tagged on the MLflow run, and
   a ``TrainSummary``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
import torch

from negotiation.protocol import Recipe
from negotiation.tracking import MlflowTracker, NullTracker, RecordingTracker, experiment_name, flatten, git_commit
from negotiation.training._checkpoint import (
    TrainingInfo, read_training_info, relative_to_folder, resolve_from, step_dir, write_checkpoint,
)
from negotiation.training._config import RunArm
from negotiation.training._grpo import lr_at

__all__ = ["CURVES_FILE", "VALIDATION_FILE", "RunLedger", "TrainSummary", "run_steps", "run_tracker",
           "run_training", "save_step", "write_curves"]

CURVES_FILE, VALIDATION_FILE = "curves.csv", "validation.csv"
State = TypeVar("State")


@dataclass
class RunLedger:
    """Where a run started and what it has produced so far."""

    base_dir: Path
    """The chain's ``step_0/``: the KL reference of every run of the chain."""
    branch_step: int
    """Combined step the run starts from (the parent's; 0 for a fresh run)."""
    consumed: int
    """Training scenarios drawn so far by the chain (the next item's index)."""
    parent_dir: Path | None
    """The parent's ``step_N/`` a continuation starts from; ``None`` for a fresh run."""
    rng: np.random.Generator
    """Draws the rollouts' sample seeds."""
    curves: list[dict[str, float]] = field(default_factory=list)
    """One row of training metrics per own step."""
    val_scores: dict[int, float] = field(default_factory=dict)
    """Own step -> validation mean S."""
    checkpoints: dict[int, str] = field(default_factory=dict)
    """Own step -> ``step_N`` folder written."""


@dataclass(frozen=True)
class TrainSummary:
    """What one training run produced (both trainers; ``select@`` and MLflow read it)."""

    arm: str
    run_dir: Path
    branch_step: int
    """Combined step the run started from (0 for a fresh run)."""
    steps: int
    """Own optimizer steps trained."""
    checkpoints: dict[int, str]
    """Own step -> ``step_N`` folder written."""
    val_scores: dict[int, float]
    """Own step -> validation mean S."""
    seconds: float
    """Wall-clock seconds of the call."""
    cpu_seconds: float
    """CPU seconds of this process during the call (what the run costs on a loaded machine)."""
    mlflow_run_id: str | None


def _start(arm: RunArm, run_dir: Path) -> RunLedger:
    torch.manual_seed(arm.seed)
    if arm.parent is None:
        base_dir, branch, consumed = step_dir(run_dir, 0), 0, 0
    else:
        info = read_training_info(arm.parent)
        base_dir = resolve_from(arm.parent, info.base_checkpoint)
        branch, consumed = info.combined_step, info.consumed_scenarios
    rng = np.random.default_rng(np.random.SeedSequence([arm.seed, branch]))
    return RunLedger(base_dir, branch, consumed, arm.parent, rng)


def save_step(ledger: RunLedger, arm: RunArm, run_dir: Path, step: int, model: Any, tracker: NullTracker) -> None:
    """Write ``step_N/`` (``model.save(folder)`` and ``training_info.json``) and record it."""
    folder = step_dir(run_dir, step)
    parent = relative_to_folder(ledger.parent_dir, folder) if ledger.parent_dir is not None else None
    info = TrainingInfo(step=step, combined_step=ledger.branch_step + step, branch_step=ledger.branch_step,
                        arm=arm.arm, seed=arm.seed, lr_multiple=arm.lr_multiple, consumed_scenarios=ledger.consumed,
                        base_checkpoint=relative_to_folder(ledger.base_dir, folder), parent_checkpoint=parent,
                        val_score=ledger.val_scores.get(step), mlflow_run_id=tracker.run_id)
    write_checkpoint(folder, model, info)
    ledger.checkpoints[step] = folder.as_posix()


def write_curves(ledger: RunLedger, run_dir: Path) -> None:
    """``curves.csv`` (one row per own step) and ``validation.csv`` (one row per validation)."""
    import pandas as pd

    pd.DataFrame(ledger.curves).to_csv(run_dir / CURVES_FILE, index=False)
    pd.DataFrame({"step": list(ledger.val_scores),
                  "combined_step": [ledger.branch_step + s for s in ledger.val_scores],
                  "validation/score": list(ledger.val_scores.values())}).to_csv(run_dir / VALIDATION_FILE, index=False)


def run_tracker(arm: RunArm, *, track: bool, parent_run: str | None, protocol_hash: str, size: str | int,
                params: dict[str, Any], record_to: Path | None = None, **tags: str) -> NullTracker:
    """The run's MLflow tracker (a ``NullTracker`` when ``track`` is false): ``params`` flattened,
    the run's identity, provenance and any trainer-specific ``tags``. With ``record_to`` the run
    is recorded to that file (``RecordingTracker``) for the ``track`` stage to log."""
    if not track:
        return NullTracker()
    identity = {"study": arm.study, "arm": arm.arm, "size": size, "lr_multiple": arm.lr_multiple,
                "parent_run": parent_run or "", "parent_arm": arm.parent_arm or ""}
    provenance = {"protocol_hash": protocol_hash, "git_commit": git_commit(), "phase": "training"}
    if record_to is not None:
        return RecordingTracker(record_to, arm.arm, flatten(params), {**identity, **tags, **provenance})
    return MlflowTracker(experiment_name(arm.study), arm.arm, flatten(params), {**identity, **tags, **provenance})


def run_training(arm: RunArm, run_dir: str | Path, *, threads: int, setup: Callable[[RunLedger], State],
                 tracker: Callable[[str | None], NullTracker], train: Callable[[State, NullTracker], None],
                 write: Callable[[State], None] = lambda state: None) -> TrainSummary:
    """Run one training run: seeding and start, ``setup`` (the trainer's model and optimizer),
    ``train`` (its steps, ``run_steps``), then the tables; torch runs on ``threads`` CPU threads
    meanwhile. A failure marks the MLflow run FAILED and propagates.

    Args:
        tracker: builds the tracker from the parent's MLflow run id (``run_tracker``).
        write: writes the trainer's own tables besides the curves, after the run ends.
    """
    t0, cpu0, run_dir, old_threads = time.perf_counter(), time.process_time(), Path(run_dir), torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        ledger = _start(arm, run_dir)
        state = setup(ledger)
        run = tracker(read_training_info(arm.parent).mlflow_run_id if arm.parent else None)
        try:
            train(state, run)
        except BaseException:
            run.finish("FAILED")
            raise
        run.set_tags({"checkpoints": " ".join(ledger.checkpoints[s] for s in sorted(ledger.checkpoints))})
        run.finish()
    finally:
        torch.set_num_threads(old_threads)
    write_curves(ledger, run_dir)
    write(state)
    return TrainSummary(arm.arm, run_dir, ledger.branch_step, arm.steps, dict(ledger.checkpoints),
                        dict(ledger.val_scores), time.perf_counter() - t0, time.process_time() - cpu0, run.run_id)


def run_steps(ledger: RunLedger, arm: RunArm, recipe: Recipe, tracker: NullTracker, *, validate: Callable[[], float],
              save: Callable[[int], None], update: Callable[[int, float], dict[str, float]],
              on_step: Callable[[int, int, dict[str, float]], None] | None = None,
              resume_step: int | None = None) -> None:
    """Own steps ``0 .. arm.steps`` of one run.

    Args:
        validate: plays the fixed validation set, returns its mean S.
        save: writes ``step_N/`` of an own step (``save_step``).
        update: one GRPO step (rollouts and the optimizer step) at own step ``s`` and rate
            ``lr``; returns its metrics (MLflow keys).
        on_step: ``(own step done, own steps, metrics)`` after each optimizer step (progress).
        resume_step: an interrupted run resumed from its own ``step_N/``: steps up to N, N's
            validation and save included, are done (the ledger holds their results); the loop
            goes on from N's update with the schedule's step N.
    """
    peak, floor = recipe.learning_rate * arm.lr_multiple, recipe.lr_floor * arm.lr_multiple
    for step in range(resume_step or 0, arm.steps + 1):
        last, combined = step == arm.steps, ledger.branch_step + step
        done = step == resume_step  # validated and saved before the interruption
        validating = (step == 0 and recipe.validate_at_step_zero) or (step > 0 and step % recipe.validation_every == 0)
        if not done and (validating or last):
            ledger.val_scores[step] = validate()
            tracker.log_step(combined, {"validation/score": ledger.val_scores[step]})
        fresh_start = step == 0 and ledger.parent_dir is None  # a continuation's step 0 is its parent
        if not done and (fresh_start or (step > 0 and (step % recipe.checkpoint_every == 0 or last))):
            save(step)
            tracker.flush()
        if last:
            break
        lr = lr_at(step, peak=peak, floor=floor, warmup_steps=recipe.warmup_steps, total_steps=arm.steps)
        metrics = update(step, lr)
        ledger.curves.append({"step": step + 1, "combined_step": combined + 1, **metrics})
        tracker.log_step(combined + 1, metrics)
        if on_step is not None:
            on_step(step + 1, arm.steps, metrics)
