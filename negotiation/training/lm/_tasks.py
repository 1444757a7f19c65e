"""The learning ladder's tasks (``protocol/lm/learning.yaml``) as token-trainer runs.

A task is data: changes to the study's recipe, buyers and reward kind (``LearningTask``). This
module turns (protocol, task, budget, size) into an ordinary ``LmTrainConfig`` with
``model_copy`` overrides, so the trainer under test is exactly the one every arm trains with,
and reads a finished run's curves against the task's pass criteria. Running a task end to end
(base, training, verdict) is ``negotiation.learning``'s, which also needs the ladder's builders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation.errors import ConfigError
from negotiation.protocol import (
    VALIDATION_METRIC, LearningBudget, LearningCriterion, LearningTask, Protocol,
)
from negotiation.training.lm._config import LmArm, LmRuntime, LmTrainConfig
from negotiation.training.lm._trainer import CURVES_FILE, VALIDATION_FILE

__all__ = ["FROZEN_RATE", "VERDICT_FILE", "criterion_verdict", "needs_frozen_control", "task_train_config",
           "task_verdict", "write_verdict"]

VERDICT_FILE = "verdict.json"
"""The verdict a task run writes beside its curves."""

FROZEN_RATE = 1e-12
"""Peak rate of a frozen control run: an AdamW step moves a float32 master by about the rate, far
below the spacing of float32 numbers near the weights' size (about 1e-9 at 0.02), so no weight
changes while the run plays, logs and validates exactly as the learner does (a rate must be > 0)."""

READ_EVERY = 8
"""Steps between a task run's validations and checkpoints (and at its last step)."""


def _task_recipe(protocol: Protocol, task: LearningTask, budget: LearningBudget, size: str) -> Any:
    """The size's recipe with the task's and the budget's overrides, re-validated."""
    base = protocol.recipe_for(size)
    group = budget.group_size or base.group_size
    scenarios = budget.scenarios_per_step or base.scenarios_per_step
    steps = budget.steps
    updates = {
        "learning_rate": budget.learning_rate,
        "lr_floor": budget.learning_rate * base.lr_floor / base.learning_rate,  # the recipe's floor ratio
        "group_size": group, "scenarios_per_step": scenarios, "episodes_per_step": group * scenarios,
        "rollout_turns": task.rollout_turns or base.rollout_turns,
        "warmup_steps": base.warmup_steps if task.warmup_steps is None else task.warmup_steps,
        "validation_scenarios": task.validation_scenarios or base.validation_scenarios,
        "normalize_rewards": base.normalize_rewards if budget.normalize_rewards is None else budget.normalize_rewards,
        "baseline": budget.baseline or base.baseline,
        # one run, validated and saved every READ_EVERY steps and at its end: a run cut short (a GPU
        # call's time limit) keeps its curves and resumes; the task reads the curves
        "initial_steps": steps, "combined_steps": steps + 1, "validation_every": min(steps, READ_EVERY),
        "checkpoint_every": min(steps, READ_EVERY),
        "read_points": {},
    }
    return type(base).model_validate({**base.model_dump(), **updates})


def task_train_config(protocol: Protocol, name: str, task: LearningTask, budget: LearningBudget, size: str, *,
                      base: Path, runtime: LmRuntime | None = None) -> LmTrainConfig:
    """The ``LmTrainConfig`` of task ``name`` at ``size`` under ``budget`` (base: the size's
    warm-started Hugging Face folder). The recipe section the size trains with is replaced by the
    task's recipe and the training pool by the task's buyers; nothing else of the protocol changes."""
    if size not in budget.sizes:
        raise ConfigError(f"learning task {name!r}: size {size!r} is not in the budget's sizes {list(budget.sizes)}")
    recipe = _task_recipe(protocol, task, budget, size)
    section = protocol.recipe_key_for(size)
    updates: dict[str, Any] = {section: recipe}
    if task.training_buyers is not None:
        buyers = protocol.buyers.model_dump()
        buyers["training"] = [b.model_dump() for b in task.training_buyers]
        updates["buyers"] = type(protocol.buyers).model_validate(buyers)
    arm = LmArm(study=protocol.study, arm=f"learn_{name}_{size}", size=size, base=Path(base), lr_multiple=1.0,
                steps=budget.steps, seed=budget.seed)
    return LmTrainConfig(protocol=protocol.model_copy(update=updates), arm=arm, runtime=runtime or LmRuntime(),
                         reward=task.reward)


def criterion_verdict(criterion: LearningCriterion, values: list[float]) -> dict[str, Any]:
    """First-k mean, last-k mean, their change and whether it passes ``criterion``."""
    k = criterion.window
    if len(values) < 2 * k and criterion.metric != "validation/score":
        raise ValueError(f"{criterion.metric}: {len(values)} values, the criterion needs 2 x {k}")
    if len(values) < 2:
        raise ValueError(f"{criterion.metric}: {len(values)} values, a change needs at least 2")
    k = min(k, len(values) // 2)
    first, last = float(pd.Series(values[:k]).mean()), float(pd.Series(values[-k:]).mean())
    change = last - first
    moved = change if criterion.direction == "increase" else -change
    return {"metric": criterion.metric, "direction": criterion.direction, "window": k,
            "min_change": criterion.min_change, "first_mean": first, "last_mean": last, "change": change,
            "passed": bool(moved >= criterion.min_change), "values": [float(v) for v in values]}


def needs_frozen_control(task: LearningTask) -> bool:
    """Whether a criterion of ``task`` reads its run against a frozen control."""
    return any(c.against == "frozen_control" for c in task.criteria)


def task_verdict(task: LearningTask, run_dir: Path, control_dir: Path | None = None) -> dict[str, Any]:
    """Every criterion of ``task`` read from a finished run's ``curves.csv`` / ``validation.csv``;
    a ``frozen_control`` criterion reads the run minus its control (``control_dir``) per step. With
    a control, ``paired`` also reads every curve criterion that way (for the record)."""
    curves = pd.read_csv(Path(run_dir) / CURVES_FILE)
    validation = pd.read_csv(Path(run_dir) / VALIDATION_FILE)
    control = None if control_dir is None else pd.read_csv(Path(control_dir) / CURVES_FILE)
    if control is None and needs_frozen_control(task):
        raise ValueError(f"{run_dir}: a criterion reads against a frozen control, and no control run was given")

    def paired(c: LearningCriterion) -> list[float]:
        assert control is not None
        return [float(a - b) for a, b in zip(curves[c.metric], control[c.metric], strict=True)]

    results = [criterion_verdict(c, paired(c) if c.against == "frozen_control" else
                                 [float(v) for v in (validation if c.metric == VALIDATION_METRIC else curves)[c.metric]])
               for c in task.criteria]
    out: dict[str, Any] = {"criteria": results, "passed": all(r["passed"] for r in results)}
    if control is not None:
        out["paired"] = [criterion_verdict(c, paired(c)) for c in task.criteria if c.metric != VALIDATION_METRIC]
    return out


def write_verdict(run_dir: Path, verdict: dict[str, Any]) -> Path:
    """``verdict.json`` in ``run_dir``."""
    path = Path(run_dir) / VERDICT_FILE
    path.write_text(json.dumps(verdict, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
