"""Protocol sections about training: the GRPO recipe (Appendix H) and the seller sizes (Table 8)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from negotiation.protocol._files import StrictModel
from negotiation.protocol._schema_env import Spec

__all__ = ["Clip", "KlPenalty", "LlmSize", "Optimizer", "PolicySize", "PolicyWidth", "Recipe", "Sequences", "Size"]

PolicyWidth = Annotated[int, Field(ge=2, le=4096)]
"""Hidden width of a demo policy network: the one rule the protocol's ``PolicySize`` and the
network's stored ``PolicyArch`` both validate with."""


class Optimizer(StrictModel):
    """Optimizer settings shared by every arm."""

    name: Literal["adam", "fused_adam", "adamw"]
    """Optimizer implementation."""
    betas: tuple[float, float]
    """Adam (β1, β2)."""
    weight_decay: float = Field(ge=0)
    """Decoupled weight decay."""
    precision: str
    """Precision of moments and master weights, e.g. ``bf16`` (``fp32`` on the CPU)."""


class KlPenalty(StrictModel):
    """KL penalty to the initial policy."""

    coefficient: float = Field(ge=0)
    """Weight of the KL term."""
    estimator: Literal["k1", "k2", "k3"]
    """Per-token KL estimator (Schulman's k1/k2/k3)."""
    applied_to: Literal["loss", "reward"]
    """Where the penalty enters: the loss (paper) or folded into the reward."""


class Clip(StrictModel):
    """PPO ratio clipping ``[1 - low, 1 + high]``."""

    low: float = Field(gt=0, lt=1)
    """Lower clip offset; below 1 so the lower bound ``1 - low`` of the ratio stays positive."""
    high: float = Field(gt=0)
    """Upper clip offset."""


class Sequences(StrictModel):
    """Token caps of a language-model seller; ``null`` as a whole when the seller has no tokens."""

    context_tokens: int = Field(gt=0)
    """Maximum context length."""
    prompt_tokens: int = Field(gt=0)
    """Prompt cap."""
    new_tokens_per_turn: int = Field(gt=0)
    """Generation cap per seller turn."""


class Recipe(StrictModel):
    """The GRPO recipe every trained arm runs, up to its learning-rate multiple (Appendix H)."""

    algorithm: Literal["grpo"]
    """Policy-gradient estimator: group-normalized advantages, no learned value model."""
    normalize_rewards: bool
    """Whether rewards are normalized within each group."""
    baseline: Literal["leave_one_out", "group_mean"]
    """Per-group baseline."""
    group_size: int = Field(gt=1)
    """Rollouts per scenario (the GRPO group)."""
    scenarios_per_step: int = Field(gt=0)
    """Scenarios per optimizer step."""
    episodes_per_step: int = Field(gt=0)
    """Episodes per optimizer step; must equal group_size * scenarios_per_step."""
    initial_steps: int = Field(gt=0)
    """Optimizer steps of an initial run."""
    combined_steps: int = Field(gt=0)
    """Steps of an initial run plus its continuation; a continuation trains the difference."""
    learning_rate: float = Field(gt=0)
    """Shared peak learning rate; an arm's ``lr_multiple`` scales it."""
    lr_floor: float = Field(ge=0)
    """Cosine floor at the shared rate; an arm's ``lr_multiple`` scales it too."""
    warmup_steps: int = Field(ge=0)
    """Linear warmup steps at the start of every schedule."""
    schedule: Literal["warmup_cosine"]
    """Learning-rate schedule."""
    continuation_schedule: Literal["restart", "resume"]
    """A continuation restarts its own warmup-cosine schedule, or resumes the parent's."""
    optimizer: Optimizer
    """Optimizer."""
    kl: KlPenalty
    """KL penalty to the initial policy."""
    clip: Clip
    """PPO clipping."""
    loss_level: Literal["token", "sequence"]
    """Whether the loss averages over tokens or over sequences."""
    validate_at_step_zero: bool
    """Whether validation also runs before the first step."""
    validation_scenarios: int = Field(gt=0)
    """Fixed validation scenarios, drawn from the top tenth of the training seed block (which
    training then never uses); validation only logs a curve, it never selects a checkpoint."""
    validation_every: int = Field(gt=0)
    """Validation period in steps."""
    checkpoint_every: int = Field(gt=0)
    """Checkpoint period in steps; the read-point rule can only pick saved steps."""
    sequences: Sequences | None
    """Token caps (``null`` for the demo's token-free policy network)."""
    rollout_turns: int = Field(gt=0)
    """Generation calls the rollout driver allows per episode."""
    reward_plumbing: Literal["front_loaded_floor", "terminal"]
    """How Eq. 1 reaches the trainer: ``-λ`` first and ``Eq. 1 + λ`` last, or one terminal reward."""
    seeds_per_arm: int = Field(gt=0)
    """Independent training runs (seeds) per size-by-rate arm."""
    read_points: dict[str, int]
    """Named combined optimizer steps that arms are read at (``arms.yaml: read_point``)."""

    @model_validator(mode="after")
    def _consistent(self) -> "Recipe":
        if self.episodes_per_step != self.group_size * self.scenarios_per_step:
            raise ValueError(
                f"episodes_per_step {self.episodes_per_step} != group_size {self.group_size} "
                f"* scenarios_per_step {self.scenarios_per_step}"
            )
        if self.combined_steps <= self.initial_steps:
            raise ValueError(f"combined_steps {self.combined_steps} must exceed initial_steps {self.initial_steps}")
        if self.lr_floor > self.learning_rate:
            raise ValueError(f"lr_floor {self.lr_floor} exceeds learning_rate {self.learning_rate}")
        for name, step in self.read_points.items():
            if not 0 <= step <= self.combined_steps or step % self.checkpoint_every:
                raise ValueError(
                    f"read_points.{name} = {step} is not a checkpoint step (multiple of "
                    f"{self.checkpoint_every}) within 0..{self.combined_steps}"
                )
        return self

    @property
    def continuation_steps(self) -> int:
        """Steps of a continuation that branches from the parent's planned final step."""
        return self.combined_steps - self.initial_steps


class LlmSize(StrictModel):
    """A language-model seller size with its hardware-forced settings (Table 8)."""

    TRAINING_FIELDS: ClassVar[tuple[str, ...]] = ("checkpoint", "train_tensor_parallel", "train_micro_batch",
                                                  "generation_memory_fraction")
    """The fields a training run reads (NeMo-RL's config): a deviation value of one reruns the run."""

    kind: Literal["llm"]
    """Discriminator."""
    checkpoint: str
    """Base checkpoint (hub id or directory) every run of this size starts from."""
    architecture: str
    """Architecture family, e.g. ``e-series`` or ``conventional``."""
    effective_params_b: float = Field(gt=0)
    """Effective parameters, billions."""
    total_params_b: float = Field(gt=0)
    """Stored parameters, billions."""
    train_tensor_parallel: int = Field(gt=0)
    """Tensor-parallel degree in training."""
    train_micro_batch: int = Field(gt=0)
    """Training micro-batch size."""
    generation_memory_fraction: float = Field(gt=0, le=1)
    """Accelerator memory fraction given to generation during training."""
    eval_accelerators: int = Field(gt=0)
    """Accelerators that serve the seller at evaluation."""
    accelerator_memory_gb: int = Field(gt=0)
    """Memory of each evaluation accelerator."""


class PolicySize(StrictModel):
    """A demo policy-network size: the width is the size."""

    BUILT_ONCE: ClassVar[bool] = True
    """``init@<size>`` writes the base once from these fields; every arm and run of the size shares
    it, so no deviation value may change one for some arms (``size_value_problem``)."""

    kind: Literal["policy"]
    """Discriminator."""
    width: PolicyWidth
    """Hidden width of the torch policy."""
    checkpoint: str
    """Directory of the initial policy (the base), written deterministically from width and seed
    (and the protocol's ``policy_warm_start``, if any)."""
    init_seed: int = Field(ge=0)
    """Seed of the initial weights, shared by every run and the base arm of this size."""


class PolicyWarmStart(StrictModel):
    """Imitation of scripted sellers that turns each untrained policy size into its base.

    Every width gets the same corpus and budget (steps x turns), so a wider network, which fits the
    personas better in that budget, plays like a larger base: the demo's counterpart of the paper's
    bases differing by size (docs/training.md)."""

    sellers: tuple[Spec, ...] = Field(min_length=1)
    """Scripted seller personas whose turns are imitated, each against a training buyer."""
    seeds_per_domain: int = Field(gt=0)
    """Scenarios per training domain: the first seeds of ``seeds.training``."""
    steps: int = Field(gt=0)
    """Optimizer steps (AdamW), the same for every size."""
    batch_turns: int = Field(gt=0)
    """Seller turns per step, drawn with replacement from the corpus."""
    learning_rate: float = Field(gt=0)
    """Constant learning rate."""
    weight_decay: float = Field(ge=0)
    """Decoupled weight decay."""
    seed: int = Field(ge=0)
    """Seed of the turn draws."""


from negotiation.protocol._schema_lm import LmSize  # noqa: E402 - the ladder's sizes live with the ladder

Size = Annotated[LlmSize | PolicySize | LmSize, Field(discriminator="kind")]
