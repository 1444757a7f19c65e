"""Typed inputs of the trainers: the protocol's recipe, the training data, one run.

The recipe is the protocol's own model (``negotiation.protocol.Recipe``; a run reads the one
``Protocol.recipe_for`` gives its size): nothing here restates or re-validates a recipe number.
What this module adds is what both trainers share and the protocol does not state: which recipe
choices the trainers implement (``recipe_problems``), the training-data view both backends draw
scenarios from (``TrainData``), and the identity of one run (``RunArm``), which each trainer
extends with its model (``ArmTraining`` here, ``LmArm`` in ``negotiation.training.lm``).
``TrainConfig`` bundles what one demo ``train_arm`` call needs.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from negotiation.agents import PolicyArch
from negotiation.protocol import Recipe

__all__ = ["ArmTraining", "BuyerShare", "RunArm", "TrainConfig", "TrainData", "recipe_problems"]

# Recipe choices whose other values neither trainer implements, with the value they implement.
_IMPLEMENTED = {"schedule": "warmup_cosine", "continuation_schedule": "restart", "loss_level": "token"}


def recipe_problems(recipe: Recipe, *, tokens: bool) -> list[str]:
    """``key: reason`` for every choice of ``recipe`` the trainers do not implement.

    Both trainers: group advantages under either baseline, normalized or not (a group of >= 3,
    so a rollout's others have a sample standard deviation), the token-level mean, k3 KL in the loss, a
    warmup-cosine schedule that a continuation restarts. The token-level trainer (``tokens``)
    also needs token caps and the front-loaded floor of App. H (a truncated episode keeps -λ).
    """
    need = {**_IMPLEMENTED, **({"reward_plumbing": "front_loaded_floor"} if tokens else {})}
    problems = [f"{key}: the trainers implement {value!r}, got {getattr(recipe, key)!r}"
                for key, value in need.items() if getattr(recipe, key) != value]
    if recipe.group_size < 3:
        problems.append(f"group_size: the leave-one-out std needs >= 3, got {recipe.group_size}")
    if recipe.kl.estimator != "k3" or recipe.kl.applied_to != "loss":
        problems.append(f"kl: the trainers implement k3 in the loss, got {recipe.kl.estimator!r} in the "
                        f"{recipe.kl.applied_to!r}")
    if tokens and recipe.sequences is None:
        problems.append("sequences: a language-model run needs token caps, got null")
    return problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class BuyerShare(_Strict):
    """One training buyer and its share of the training scenarios."""

    spec: str = Field(min_length=3)
    """Agent spec string, e.g. ``scripted:boulware?e=0.2``."""
    weight: float = Field(gt=0)
    """Relative share (normalized over the pool)."""


class TrainData(_Strict):
    """Where training and validation scenarios come from."""

    version: int = 1
    """Version of this record."""
    domains: tuple[str, ...] = Field(min_length=1)
    """Training domains (the held-out domain is never listed here)."""
    train_seeds: tuple[int, int]
    """Half-open block ``[lo, hi)`` of training scenario seeds."""
    validation_seeds: tuple[int, int]
    """Half-open block of validation scenario seeds, disjoint from ``train_seeds``."""
    validation_scenarios: int = Field(ge=1)
    """Fixed validation scenarios, each played once with its own sample seed."""
    buyers: tuple[BuyerShare, ...] = Field(min_length=1)
    """The training buyer pool and its mixture (also used for validation)."""
    dirichlet_alpha: float = Field(gt=0)
    """Concentration of the preference draws of every scenario."""

    @model_validator(mode="after")
    def _blocks(self) -> TrainData:
        for name in ("train_seeds", "validation_seeds"):
            lo, hi = getattr(self, name)
            if not 0 <= lo < hi:
                raise ValueError(f"{name} must be [lo, hi) with 0 <= lo < hi, got {[lo, hi]}")
        (a, b), (c, d) = self.train_seeds, self.validation_seeds
        if a < d and c < b:
            raise ValueError(f"train_seeds {[a, b]} overlap validation_seeds {[c, d]}")
        return self


class RunArm(_Strict):
    """One training run: a rate multiple, a step budget, a seed, maybe a parent checkpoint."""

    version: int = 1
    """Version of this record."""
    study: str = Field(min_length=1)
    """Study name (the MLflow experiment)."""
    arm: str = Field(min_length=1)
    """Run name, unique in the study (the MLflow run name)."""
    lr_multiple: float = Field(gt=0)
    """Multiple of the shared learning rate (peak and floor)."""
    steps: int = Field(ge=1)
    """Optimizer steps of this run (a continuation counts only its own)."""
    seed: int = Field(ge=0)
    """Training seed: data order, rollout sample seeds, torch's global stream."""
    parent: Path | None = None
    """``step_N/`` folder to continue from (fresh schedule, KL to the chain's base)."""
    parent_arm: str | None = None
    """Run whose checkpoint ``parent`` is (tagged on the MLflow run)."""


class ArmTraining(RunArm):
    """A run of the demo's policy network: its shape and initial weights."""

    arch: PolicyArch
    """The network's shape, the policy's own model (its width is the protocol size's)."""
    init_seed: int = Field(ge=0)
    """Seed of the initial weights (shared by every run and the base arm of the size)."""
    base: Path | None = None
    """The size's base checkpoint (its ``init@`` output) a fresh run starts from and keeps as its KL
    reference; ``None``: the untrained init of ``init_seed`` (what ``init@`` writes without a
    ``policy_warm_start``)."""


class TrainConfig(_Strict):
    """Everything one ``train_arm`` call needs besides the environment constants."""

    version: int = 1
    """Version of this record."""
    recipe: Recipe
    """The run's recipe: the protocol's own section, as ``Protocol.recipe_for`` gives it."""
    data: TrainData
    """Training and validation scenarios."""
    arm: ArmTraining
    """The arm being trained."""
    protocol_hash: str = ""
    """Hash of the frozen protocol the numbers came from (tagged on the run)."""

    @model_validator(mode="after")
    def _implemented(self) -> TrainConfig:
        problems = recipe_problems(self.recipe, tokens=False)
        if problems:
            raise ValueError(f"protocol/{self.arm.study}/protocol.yaml:training.{problems[0]}")
        return self
