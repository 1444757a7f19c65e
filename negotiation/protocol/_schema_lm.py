"""Protocol sections of the from-scratch language-model ladder: sizes, tokenizer, warm start.

Used by the ``lm`` study (``protocol/lm/``), whose sellers are small causal LMs built here from a
seed (no weights can be downloaded), given a byte-level BPE tokenizer trained on the project's own
dialogues, and warm-started by imitation of scripted sellers (docs/lm.md).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from negotiation.protocol._files import StrictModel
from negotiation.protocol._schema_env import Spec

__all__ = ["LmCorpus", "LmSize", "LmTokenizer", "WarmStart", "VLLM_CPU_HEAD_DIMS"]

VLLM_CPU_HEAD_DIMS = (32, 64, 80, 96, 112, 128, 256)
"""Attention head sizes vLLM's CPU kernels accept (``head_dim=16`` is refused, 64 was checked)."""


class LmSize(StrictModel):
    """One rung of the ladder: a causal-LM shape initialised from a seed, then warm-started."""

    BUILT_ONCE: ClassVar[bool] = True
    """``init@<size>`` builds the size's base once from these fields and every arm and run of the
    size starts from it, so no deviation value may change one for some arms (``size_value_problem``)."""

    kind: Literal["lm"]
    """Discriminator."""
    family: Literal["gemma3", "llama"]
    """transformers architecture: ``gemma3`` (``Gemma3ForCausalLM``, the paper's family) or ``llama``."""
    hidden_size: int = Field(gt=0)
    """Model width; equals ``num_heads * head_dim``."""
    num_layers: int = Field(gt=0)
    """Decoder layers."""
    num_heads: int = Field(gt=0)
    """Attention (query) heads."""
    num_kv_heads: int = Field(gt=0)
    """Key/value heads (grouped-query attention); divides ``num_heads``."""
    head_dim: int
    """Size of one attention head; one of ``VLLM_CPU_HEAD_DIMS`` so vLLM's CPU backend serves it."""
    intermediate_size: int = Field(gt=0)
    """Width of the MLP."""
    context_tokens: int = Field(gt=0)
    """Maximum positions (``max_position_embeddings``)."""
    init_seed: int = Field(ge=0)
    """Seed of the initial weights; same seed, same bytes."""
    checkpoint: str
    """Where the warm-started base (HF folder) is written, relative to the repository root."""
    profile: Literal["cpu", "gpu"]
    """Where this size is meant to be built and trained: 2 CPU cores, or one GPU."""

    @model_validator(mode="after")
    def _shape(self) -> "LmSize":
        if self.head_dim not in VLLM_CPU_HEAD_DIMS:
            raise ValueError(f"head_dim {self.head_dim} is not one vLLM's CPU attention serves "
                             f"{VLLM_CPU_HEAD_DIMS}")
        if self.num_heads * self.head_dim != self.hidden_size:
            raise ValueError(f"num_heads {self.num_heads} * head_dim {self.head_dim} != hidden_size "
                             f"{self.hidden_size}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_kv_heads {self.num_kv_heads} does not divide num_heads {self.num_heads}")
        return self


class LmCorpus(StrictModel):
    """Scripted seller dialogues on the training domains and seeds (tokenizer and warm start)."""

    sellers: tuple[Spec, ...] = Field(min_length=1)
    """Scripted seller personas whose turns are imitated (several, so no one style is copied)."""
    train_seeds_per_domain: int = Field(gt=0)
    """Training scenarios per training domain: the first seeds of ``seeds.training``."""
    validation_seeds_per_domain: int = Field(gt=0)
    """Held-out scenarios per training domain: the last seeds of ``seeds.training``."""
    prompt_variants: tuple[Literal["evaluation", "training"], ...] = Field(min_length=1)
    """Prompt templates the seller turns are rendered in (``evaluation``: one example per turn;
    ``training``: one multi-turn chat per episode)."""


class LmTokenizer(StrictModel):
    """The byte-level BPE tokenizer every size shares."""

    vocab_size: int = Field(ge=512)
    """Vocabulary size, special tokens included."""


class WarmStart(StrictModel):
    """Supervised imitation of scripted sellers that turns a random init into an instruct base."""

    corpus: LmCorpus
    """Which dialogues are imitated (the tokenizer is trained on the training part of the same)."""
    steps: int = Field(gt=0)
    """Optimizer steps of a cpu-profile size."""
    batch_sequences: int = Field(gt=0)
    """Chats per optimizer step of a cpu-profile size."""
    gpu_steps: int = Field(gt=0)
    """Optimizer steps of a gpu-profile size."""
    gpu_batch_sequences: int = Field(gt=0)
    """Chats per optimizer step of a gpu-profile size."""
    sequence_tokens: int = Field(gt=0)
    """Longest example (tokens); longer examples are left out and counted."""
    learning_rate: float = Field(gt=0)
    """Peak learning rate (AdamW)."""
    warmup_steps: int = Field(ge=0)
    """Linear warmup, then cosine to ``learning_rate / 10``."""
    weight_decay: float = Field(ge=0)
    """Decoupled weight decay."""
    seed: int = Field(ge=0)
    """Data order seed."""
    validation_every: int = Field(gt=0)
    """Steps between validation-loss measurements."""
    validation_chats: int = Field(gt=0)
    """Held-out chats the validation loss averages over: evenly spaced over the validation
    split in its fixed order (all of them when the split is smaller)."""

    @model_validator(mode="after")
    def _warmup(self) -> "WarmStart":
        if self.warmup_steps >= min(self.steps, self.gpu_steps):
            raise ValueError(f"warmup_steps {self.warmup_steps} must be below steps {self.steps} and gpu_steps "
                             f"{self.gpu_steps}")
        return self

