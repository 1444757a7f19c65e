"""Typed inputs of the demo trainer: the study's recipe, its training data, and one arm.

The numbers come from the study protocol (``protocol/<study>/protocol.yaml``); these models
only give them types and checks, they do not restate them. ``TrainConfig`` bundles what one
``train_arm`` call needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class GrpoRecipe(_Strict):
    """The GRPO recipe shared by every arm of a study (paper App. H)."""

    version: int = 1
    """Version of this record."""
    group_size: int = Field(ge=3)
    """Rollouts per scenario (the GRPO group); >= 3 so the leave-one-out std exists."""
    scenarios_per_step: int = Field(ge=1)
    """Scenarios per optimizer step; episodes per step = scenarios x group."""
    lr: float = Field(gt=0)
    """Shared peak learning rate (the 1x arm); other arms scale it by their multiple."""
    lr_floor: float = Field(ge=0)
    """Cosine floor at the 1x rate; scaled by the arm's multiple like the peak."""
    warmup_steps: int = Field(ge=0)
    """Linear warmup steps at the start of every schedule (initial run or continuation)."""
    clip_low: float = Field(ge=0, lt=1)
    """PPO ratio clip below 1."""
    clip_high: float = Field(ge=0)
    """PPO ratio clip above 1."""
    kl_coef: float = Field(ge=0)
    """Weight of the k3 KL to the base policy in the loss (not in the reward)."""
    kl_estimator: Literal["k3"] = "k3"
    """KL estimator; only k3 is implemented, as the recipe states."""
    adam_betas: tuple[float, float]
    """Adam β1, β2."""
    weight_decay: float = Field(ge=0)
    """Decoupled (AdamW) weight decay."""
    max_grad_norm: float = Field(gt=0)
    """Global gradient-norm clip (NeMo-RL's ``policy.max_grad_norm``)."""
    val_period: int = Field(ge=1)
    """Validate at step 0 and every this many steps."""
    checkpoint_period: int = Field(ge=1)
    """Write ``step_N/`` every this many steps (and at the last step)."""

    @model_validator(mode="after")
    def _floor_below_peak(self) -> GrpoRecipe:
        if self.lr_floor > self.lr:
            raise ValueError(f"lr_floor {self.lr_floor} exceeds lr {self.lr}")
        return self


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


class ArmTraining(_Strict):
    """One training arm: a size, a rate multiple, a step budget, maybe a parent checkpoint."""

    version: int = 1
    """Version of this record."""
    study: str = Field(min_length=1)
    """Study name (the MLflow experiment)."""
    arm: str = Field(min_length=1)
    """Arm name, unique in the study."""
    width: int = Field(ge=2)
    """Policy hidden width (the size)."""
    depth: int = Field(default=2, ge=1)
    """Hidden layers per MLP."""
    value_bins: int = Field(default=11, ge=2)
    """Own-φ levels of a continuous value."""
    lr_multiple: float = Field(gt=0)
    """Multiple of the shared learning rate (peak and floor)."""
    steps: int = Field(ge=1)
    """Optimizer steps of this run (a continuation counts only its own)."""
    init_seed: int = Field(ge=0)
    """Seed of the initial weights (shared by every run and the base arm of the size)."""
    seed: int = Field(ge=0)
    """Training seed: data order and rollout sample seeds."""
    parent: Path | None = None
    """``step_N/`` folder to continue from (fresh schedule, KL to the chain's base)."""
    parent_arm: str | None = None
    """Arm whose run wrote ``parent`` (tagged on the MLflow run)."""


class TrainConfig(_Strict):
    """Everything one ``train_arm`` call needs besides the environment constants."""

    version: int = 1
    """Version of this record."""
    recipe: GrpoRecipe
    """The study's recipe."""
    data: TrainData
    """Training and validation scenarios."""
    arm: ArmTraining
    """The arm being trained."""
    protocol_hash: str = ""
    """Hash of the frozen protocol the numbers came from (tagged on the run)."""
