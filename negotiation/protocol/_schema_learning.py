"""The learning ladder of the token trainer: tasks it must learn before a null is trusted.

``protocol/<study>/learning.yaml`` declares training tasks of rising difficulty as *data*: what
each changes relative to the study's recipe (reward kind, rollout turns, training buyers, group
and batch shape, learning rate, steps), a CPU budget and a GPU budget, and the pass criterion a
correct trainer meets within that budget (issue 27). The file is not part of the study's lock:
changing it changes no arm, only what the trainer is checked against (docs/training.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from negotiation.errors import ConfigError
from negotiation.protocol._files import StrictModel, load_yaml_model
from negotiation.protocol._schema_env import Name, Spec, TrainingBuyer

__all__ = ["LEARNING_FILE", "LearningBudget", "LearningCriterion", "LearningLadder", "LearningTask",
           "LearningWarmStart", "VALIDATION_METRIC", "load_learning"]

LEARNING_FILE = "learning.yaml"
"""File name of a study's learning ladder, beside its ``protocol.yaml``."""

CURVE_METRICS = ("train/reward", "train/score", "train/deal_rate", "train/bad_parse_rate")
"""Per-step columns of the trainer's ``curves.csv`` a criterion may read."""
VALIDATION_METRIC = "validation/score"
"""The column of ``validation.csv`` (mean S over the fixed validation set)."""


def _check_weights(key: str, buyers: tuple[TrainingBuyer, ...] | None) -> None:
    if buyers is not None and abs(sum(b.weight for b in buyers) - 1.0) > 1e-9:
        raise ValueError(f"{key} weights sum to {sum(b.weight for b in buyers)!r}, not 1")


class LearningWarmStart(StrictModel):
    """The base a budget trains from: the protocol's warm start (``warm_start``) with these
    changes; every ``None`` keeps the protocol's value. The tokenizer is always the study's."""

    steps: int = Field(ge=0)
    """Imitation steps (0: the untrained initialisation)."""
    batch_sequences: int | None = Field(default=None, gt=0)
    """Chats per imitation step."""
    learning_rate: float | None = Field(default=None, gt=0)
    """Peak imitation learning rate."""
    sellers: tuple[Spec, ...] | None = Field(default=None, min_length=1)
    """Scripted seller personas imitated."""
    train_seeds_per_domain: int | None = Field(default=None, gt=0)
    """Imitated scenarios per training domain."""
    prompt_variants: tuple[Literal["evaluation", "training"], ...] | None = Field(default=None, min_length=1)
    """Prompt templates the imitated turns are rendered in."""
    buyers: tuple[TrainingBuyer, ...] | None = Field(default=None, min_length=1)
    """Buyers the imitated dialogues are played against (``None``: the study's training pool). A
    buyer that accepts any readable offer makes every dialogue one seller turn long: an imitation
    of openings only, short enough for two CPU cores."""

    @model_validator(mode="after")
    def _weights(self) -> "LearningWarmStart":
        _check_weights("buyers", self.buyers)
        return self


class LearningBudget(StrictModel):
    """What one task costs on one kind of machine: the sizes, the warm start, the steps."""

    sizes: tuple[Name, ...] = Field(min_length=1)
    """lm sizes (protocol ``sizes``) the task runs at on this machine."""
    warm_start: LearningWarmStart | None = None
    """The base's warm start (``None``: the protocol's own, for the size's profile)."""
    steps: int = Field(gt=0)
    """GRPO steps of the task's run."""
    learning_rate: float = Field(gt=0)
    """Peak learning rate (the floor keeps the recipe's floor-to-peak ratio)."""
    group_size: int | None = Field(default=None, ge=3)
    """Rollouts per scenario (``None``: the recipe's); >= 3 for the leave-one-out std."""
    scenarios_per_step: int | None = Field(default=None, gt=0)
    """Scenarios per step (``None``: the recipe's)."""
    normalize_rewards: bool | None = None
    """Whether group advantages are divided by their baseline rollouts' std (``None``: the
    recipe's). ``False`` keeps the plain leave-one-out differences, whose size the returns bound."""
    baseline: Literal["leave_one_out", "group_mean"] | None = None
    """Per-group baseline (``None``: the recipe's). ``group_mean`` with normalization divides by
    the group's own std, which bounds an advantage by ``(G - 1) / sqrt(G)``."""
    seed: int = Field(default=0, ge=0)
    """Training seed of the run (data order, sample seeds, torch)."""


class LearningCriterion(StrictModel):
    """Pass rule: the mean of the last ``window`` values minus the mean of the first ``window``
    values moves in ``direction`` by at least ``min_change``."""

    against: Literal["start", "frozen_control"] = "start"
    """``start``: the run's own values. ``frozen_control``: per step, the run's value minus that of
    the same task trained at a rate that moves no weight (same scenarios, same sample seeds), so the
    scenario mix, which moves every run's training reward alike by up to 0.1 a step in the full
    game, cancels (a curve metric only)."""

    metric: Literal["train/reward", "train/score", "train/deal_rate", "train/bad_parse_rate", "validation/score"]
    """A ``curves.csv`` column (one value per step) or ``validation/score`` (one per validation)."""
    direction: Literal["increase", "decrease"]
    """Which way a learning trainer moves the metric."""
    window: int = Field(gt=0)
    """k: values averaged at each end of the curve."""
    min_change: float = Field(gt=0)
    """Least movement (in ``direction``) of last-k mean over first-k mean that passes."""

    @model_validator(mode="after")
    def _paired_curve(self) -> "LearningCriterion":
        if self.against == "frozen_control" and self.metric == VALIDATION_METRIC:
            raise ValueError("against frozen_control reads a per-step curve metric, not validation/score")
        return self


class LearningTask(StrictModel):
    """One rung: a training task defined by its changes to the study's recipe, with budgets."""

    description: str = Field(min_length=1)
    """What the task teaches and why a correct trainer must learn it."""
    reward: Literal["eq1", "parse"] = "eq1"
    """Environment reward kind (``NemoEnvSettings.reward``): ``parse`` pays 1 for a parsable first
    seller turn, else 0; ``eq1`` is the study's reward."""
    rollout_turns: int | None = Field(default=None, gt=0)
    """Seller turns the driver plays before cutting an episode (``None``: the recipe's)."""
    training_buyers: tuple[TrainingBuyer, ...] | None = None
    """Buyer pool that replaces the protocol's training pool (``None``: the study's own); weights
    sum to 1. Validation plays these buyers too."""
    warmup_steps: int | None = Field(default=None, ge=0)
    """Linear warmup steps of the rate (``None``: the recipe's)."""
    validation_scenarios: int | None = Field(default=None, gt=0)
    """Scenarios of the fixed validation set, played at step 0 and at the end (``None``: the recipe's)."""
    cpu: LearningBudget | None = None
    """Budget on 2 CPU cores (run by the slow tests); ``None``: the task is GPU only."""
    gpu: LearningBudget
    """Budget on one GPU (run by ``benchmarks/learning.py --device cuda``)."""
    criteria: tuple[LearningCriterion, ...] = Field(min_length=1)
    """Every criterion must pass."""

    @model_validator(mode="after")
    def _consistent(self) -> "LearningTask":
        _check_weights("training_buyers", self.training_buyers)
        for name, budget in (("cpu", self.cpu), ("gpu", self.gpu)):
            if budget is None:
                continue
            if self.warmup_steps is not None and self.warmup_steps >= budget.steps:
                raise ValueError(f"warmup_steps {self.warmup_steps} must be below {name}.steps {budget.steps}")
            for c in self.criteria:
                if c.metric != VALIDATION_METRIC and 2 * c.window > budget.steps:
                    raise ValueError(f"criterion {c.metric}: 2 * window {c.window} exceeds {name}.steps "
                                     f"{budget.steps} (the first and last k steps would overlap)")
        return self


class LearningLadder(StrictModel):
    """``protocol/<study>/learning.yaml``: the trainer's learning ladder (not locked)."""

    version: Literal[1]
    """Format version of this file."""
    study: Name
    """The study whose protocol (sizes, recipe, environment) the tasks modify."""
    tasks: dict[Name, LearningTask] = Field(min_length=1)
    """Tasks keyed by name, in rising difficulty."""


def load_learning(protocol, root: Path) -> LearningLadder:
    """Read ``protocol/<study>/learning.yaml`` under ``root`` and check its sizes against the
    loaded ``protocol``; a ``ConfigError`` reads ``file:key: reason``."""
    path = Path(root) / "protocol" / protocol.study / LEARNING_FILE
    ladder = load_yaml_model(LearningLadder, path, root=root)
    shown = f"protocol/{protocol.study}/{LEARNING_FILE}"
    if ladder.study != protocol.study:
        raise ConfigError(f"{shown}:study: {ladder.study!r} is not the protocol's study {protocol.study!r}")
    lm_sizes = sorted(k for k, v in protocol.sizes.items() if getattr(v, "kind", None) == "lm")
    for name, task in ladder.tasks.items():
        for machine in ("cpu", "gpu"):
            budget = getattr(task, machine)
            for i, size in enumerate(budget.sizes if budget else ()):
                if size not in lm_sizes:
                    raise ConfigError(f"{shown}:tasks.{name}.{machine}.sizes.{i}: {size!r} is not an lm size "
                                      f"of the protocol ({lm_sizes})")
    return ladder
