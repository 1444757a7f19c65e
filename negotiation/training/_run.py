"""One training run's course, the same for every trainer (demo policy network or causal LM).

A trainer's loop is its own and reads top to bottom (the model, the rollouts, the update); this
module keeps what every run does the same way, as a frame and a schedule the loop walks:

    with TrainingRun(arm, run_dir, threads=1, tracker=...) as run:
        for point in schedule(run.ledger, arm, recipe):
            if point.validate: record_validation(run.ledger, run.tracker, point, <validate>)
            if point.save: save_step(...)
            if point.lr is None: break
            record_update(run.ledger, run.tracker, point, <one GRPO step at point.lr>)

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
from typing import Any, Callable, Iterator

import numpy as np
import torch

from negotiation.protocol import Recipe
from negotiation.tracking import MlflowTracker, NullTracker, RecordingTracker, experiment_name, flatten, git_commit
from negotiation.training._checkpoint import (
    TrainingInfo, read_training_info, relative_to_folder, resolve_from, step_dir, write_checkpoint,
)
from negotiation.training._config import RunArm
from negotiation.training._grpo import lr_at

__all__ = ["CURVES_FILE", "VALIDATION_FILE", "RunLedger", "StepPoint", "TrainSummary", "TrainingRun", "record_update",
           "record_validation", "run_tracker", "save_step", "schedule", "write_curves"]

CURVES_FILE, VALIDATION_FILE = "curves.csv", "validation.csv"


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


@dataclass(frozen=True)
class StepPoint:
    """What one own step of the run does, in order: validate, save, then (unless last) update."""

    step: int
    """Own step (0 .. arm.steps)."""
    combined: int
    """The step on the chain's axis (the parent's steps first): MLflow's step."""
    validate: bool
    """Play the validation set at this step."""
    save: bool
    """Write ``step_N/`` at this step."""
    lr: float | None
    """The update's rate (warmup-cosine, restarted by a continuation); ``None`` at the last step,
    which takes no update."""


def schedule(ledger: RunLedger, arm: RunArm, recipe: Recipe, resume_step: int | None = None) -> Iterator[StepPoint]:
    """Own steps ``0 .. arm.steps`` of one run: validation at step 0 (when the recipe says so),
    every ``validation_every`` steps and at the end; ``step_N/`` at a fresh run's step 0 (the chain's
    base), every ``checkpoint_every`` steps and at the end. ``resume_step``: an interrupted run goes
    on from its own ``step_N/`` (N's validation and save were done before the interruption)."""
    peak, floor = recipe.learning_rate * arm.lr_multiple, recipe.lr_floor * arm.lr_multiple
    for step in range(resume_step or 0, arm.steps + 1):
        last, done = step == arm.steps, step == resume_step
        validating = (step == 0 and recipe.validate_at_step_zero) or (step > 0 and step % recipe.validation_every == 0)
        fresh_start = step == 0 and ledger.parent_dir is None  # a continuation's step 0 is its parent
        saving = fresh_start or (step > 0 and (step % recipe.checkpoint_every == 0 or last))
        lr = None if last else lr_at(step, peak=peak, floor=floor, warmup_steps=recipe.warmup_steps,
                                      total_steps=arm.steps)
        yield StepPoint(step, ledger.branch_step + step, not done and (validating or last), not done and saving, lr)


def record_validation(ledger: RunLedger, tracker: NullTracker, point: StepPoint, score: float) -> None:
    """Keep a validation's mean S and log it at the step."""
    ledger.val_scores[point.step] = score
    tracker.log_step(point.combined, {"validation/score": score})


def record_update(ledger: RunLedger, tracker: NullTracker, point: StepPoint, metrics: dict[str, float]) -> None:
    """Keep an update's metrics as the curve row of own step ``point.step + 1`` and log them."""
    ledger.curves.append({"step": point.step + 1, "combined_step": point.combined + 1, **metrics})
    tracker.log_step(point.combined + 1, metrics)


class TrainingRun:
    """One training run's frame, for ``with``: on entry the seeding and start (``ledger``), the
    run's tracker (``tracker``, built from the parent's MLflow run id) and torch on ``threads`` CPU
    threads; on a clean exit the checkpoint list tagged, the tracker finished and the curves
    written; on an error the MLflow run is marked FAILED and the error propagates.

    Args:
        tracker: builds the tracker from the parent's MLflow run id (``run_tracker``).
    """

    def __init__(self, arm: RunArm, run_dir: str | Path, *, threads: int,
                 tracker: Callable[[str | None], NullTracker]):
        self.arm, self.run_dir, self.threads, self._make_tracker = arm, Path(run_dir), threads, tracker

    def __enter__(self) -> TrainingRun:
        self.t0, self.cpu0, self.old_threads = time.perf_counter(), time.process_time(), torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.ledger = _start(self.arm, self.run_dir)
            parent = self.arm.parent
            self.tracker = self._make_tracker(read_training_info(parent).mlflow_run_id if parent else None)
        except BaseException:
            torch.set_num_threads(self.old_threads)
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None:
                self.tracker.finish("FAILED")
                return
            self.tracker.set_tags({"checkpoints": " ".join(self.ledger.checkpoints[s]
                                                            for s in sorted(self.ledger.checkpoints))})
            self.tracker.finish()
        finally:
            torch.set_num_threads(self.old_threads)
        write_curves(self.ledger, self.run_dir)

    def summary(self) -> TrainSummary:
        """What the run produced (call after the ``with`` block)."""
        ledger = self.ledger
        return TrainSummary(self.arm.arm, self.run_dir, ledger.branch_step, self.arm.steps, dict(ledger.checkpoints),
                            dict(ledger.val_scores), time.perf_counter() - self.t0, time.process_time() - self.cpu0,
                            self.tracker.run_id)
