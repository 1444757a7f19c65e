"""negotiation.training._run: the frame every trainer's loop runs in, and the step schedule."""

from __future__ import annotations

import pytest
import torch

from negotiation.tracking import NullTracker
from negotiation.training._config import RunArm
from negotiation.training._run import TrainingRun, record_update, record_validation, schedule
from negotiation.study import load_study


class _Tracker(NullTracker):
    def __init__(self) -> None:
        super().__init__()
        self.status: str | None = None
        self.logged: list[tuple[int, dict]] = []

    def log_step(self, step, metrics):
        self.logged.append((step, dict(metrics)))

    def finish(self, status="FINISHED"):
        self.status = status


def _arm(steps: int) -> RunArm:
    return RunArm(study="demo", arm="a", lr_multiple=1.0, steps=steps, seed=3)


def test_a_failing_loop_marks_the_run_failed_restores_threads_and_writes_no_curves(tmp_path):
    tracker, threads = _Tracker(), torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"):
        with TrainingRun(_arm(2), tmp_path, threads=1, tracker=lambda parent: tracker):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert tracker.status == "FAILED" and torch.get_num_threads() == threads
    assert not (tmp_path / "curves.csv").exists()


def test_the_schedule_validates_saves_and_updates_as_the_recipe_says(tmp_path):
    recipe = load_study("demo").protocol.training.model_copy(
        update={"validation_every": 2, "checkpoint_every": 3, "validate_at_step_zero": True, "warmup_steps": 1})
    tracker = _Tracker()
    with TrainingRun(_arm(4), tmp_path, threads=1, tracker=lambda parent: tracker) as run:
        points = list(schedule(run.ledger, run.arm, recipe))
        for point in points:
            if point.validate:
                record_validation(run.ledger, tracker, point, 0.5)
            if point.lr is not None:
                record_update(run.ledger, tracker, point, {"train/reward": float(point.step)})
    assert [(p.step, p.validate, p.save) for p in points] == [
        (0, True, True), (1, False, False), (2, True, False), (3, False, True), (4, True, True)]
    assert points[-1].lr is None and all(p.lr > 0 for p in points[:-1])
    assert tracker.status == "FINISHED" and (tmp_path / "curves.csv").read_text().count("\n") == 5  # header + 4
    assert run.summary().val_scores == {0: 0.5, 2: 0.5, 4: 0.5}


def test_a_resumed_schedule_skips_what_the_checkpoint_already_did(tmp_path):
    recipe = load_study("demo").protocol.training.model_copy(update={"validation_every": 2, "checkpoint_every": 2, "warmup_steps": 1})
    with TrainingRun(_arm(4), tmp_path, threads=1, tracker=lambda parent: _Tracker()) as run:
        points = list(schedule(run.ledger, run.arm, recipe, resume_step=2))
    assert [(p.step, p.validate, p.save) for p in points] == [(2, False, False), (3, False, False), (4, True, True)]
