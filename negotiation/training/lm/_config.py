"""Typed inputs of the token-level trainer: the frozen protocol, one arm, and the machine.

The recipe is the protocol's own typed model (``negotiation.protocol.Protocol.training``), read
as is; nothing here restates a recipe number. ``LmArm`` (a ``RunArm``) says which run is trained from which
weights; ``LmRuntime`` holds the machine knobs that never enter the objective (device, precision,
gradient checkpointing, micro-batch token budget, CPU threads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from negotiation.protocol import Protocol
from negotiation.training._config import RunArm, recipe_problems
from negotiation.training.nemo import RewardKind

__all__ = ["LmArm", "LmRuntime", "LmTrainConfig"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LmArm(RunArm):
    """A run of a language-model seller: its size and the weights it starts from."""

    size: str = Field(min_length=1)
    """Size key in the protocol's ``sizes``."""
    base: Path
    """Hugging Face folder of the size's base checkpoint (weights, tokenizer, chat template)."""


class LmRuntime(_Strict):
    """Machine settings; none of them enters the objective, the data or the optimizer."""

    version: int = 1
    """Version of this record."""
    device: str = "cpu"
    """Torch device of the policy and the reference (``cpu``, ``cuda``, ``cuda:1``)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Weights and activations of the policy and the reference. The optimizer always updates
    float32 master copies with float32 moments (``MasterAdamW``), as the paper's fused Adam keeps
    exact float32 masters (bf16 weights plus their 16 remainder bits)."""
    gradient_checkpointing: bool | None = False
    """Recompute activations in the backward pass (memory for time); None: decided on the device
    once everything is loaded, on only where one micro-batch does not fit (``needs_checkpointing``)."""
    micro_batch_tokens: int = Field(default=16384, gt=0)
    """Padded tokens per forward/backward micro-batch (gradients accumulate over the step)."""
    compile_rollout: bool = False
    """Run the rollout engine's decode step and prefill through ``torch.compile`` (fewer, fused
    kernels; same draws: ``tests/lm/test_slots.py``). Costs a compile at the first rollout."""
    threads: int = Field(default=1, gt=0)
    """torch CPU threads while training (restored afterwards)."""


class LmTrainConfig(_Strict):
    """Everything one ``train_lm_arm`` call needs."""

    version: int = 1
    """Version of this record."""
    protocol: Protocol
    """The study's frozen protocol: recipe (``training``), data, environment, sampling."""
    arm: LmArm
    """The run being trained."""
    runtime: LmRuntime = LmRuntime()
    """Machine settings."""
    protocol_hash: str = ""
    """Hash of the frozen protocol (tagged on the MLflow run)."""
    reward: RewardKind = "eq1"
    """The environment's reward kind (``NemoEnvSettings.reward``): ``eq1`` for every study arm;
    ``parse`` only for the learning ladder's format task (``protocol/lm/learning.yaml``)."""

    @property
    def run_protocol(self) -> Protocol:
        """The protocol as this run reads it: ``training`` is the size's recipe
        (``Protocol.recipe_for``: the GPU profile's for a GPU-profile size)."""
        recipe = self.protocol.recipe_for(self.arm.size)
        return self.protocol if recipe is self.protocol.training else self.protocol.model_copy(update={"training": recipe})

    @model_validator(mode="after")
    def _token_recipe(self) -> LmTrainConfig:
        if self.arm.size not in self.protocol.sizes:
            raise ValueError(f"protocol/{self.protocol.study}/protocol.yaml:sizes: arm size {self.arm.size!r} is not "
                             f"one of {sorted(self.protocol.sizes)}")
        t, section = self.protocol.recipe_for(self.arm.size), self.protocol.recipe_key_for(self.arm.size)
        problems = recipe_problems(t, tokens=True)
        if problems:
            raise ValueError(f"protocol/{self.protocol.study}/protocol.yaml:{section}.{problems[0]}")
        return self
