"""The trained seller: a Hugging Face causal LM, its tokenizer, turn tags and batched sampler.

transformers is imported on first use. A ``step_N/`` checkpoint is ``save_pretrained`` output
(``config.json``, ``model.safetensors``, ``generation_config.json``, tokenizer files with the chat
template), so ``hf:<dir>`` and ``vllm:<dir>`` load it as they load a base.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from negotiation.agents import Decoding
from negotiation.errors import ConfigError
from negotiation.training.lm._config import LmTrainConfig
from negotiation.training.lm._memory import enable_checkpointing
from negotiation.training.lm._rollout import EpisodeEngine, Generate
from negotiation.training.lm._slot_rollout import SlotRollout
from negotiation.training.nemo import NemoEnvSettings, derive_turn_tags, protocol_env_settings, stop_token_ids
from negotiation.training.nemo import template_kwargs

__all__ = ["GeneratorFactory", "HfSeller", "default_generator", "load_seller", "turn_generator"]

GeneratorFactory = Callable[..., Generate | EpisodeEngine]
"""``factory(model, tokenizer, *, sampling, stop_ids) -> Generate | EpisodeEngine``."""

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass
class HfSeller:
    """A loaded causal LM seller."""

    model: Any
    tokenizer: Any
    stop_ids: list[int]
    """End-of-turn id, then EOS when it differs: a turn ends on either."""
    pad_id: int
    """Id used to pad micro-batches (masked out of attention and loss)."""
    masters: list[torch.Tensor] | None = None
    """float32 masters of ``model.parameters()`` (``MasterAdamW.master``): what ``save`` writes, so
    a checkpoint holds the trained weights exactly and loads in float32, like the warm-started base."""

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def save(self, folder: Path) -> None:
        """Write the weights, generation config and tokenizer in Hugging Face format."""
        Path(folder).mkdir(parents=True, exist_ok=True)
        if self.masters is None or next(self.model.parameters()).dtype == torch.float32:
            self.model.save_pretrained(folder)
        else:
            names = [n for n, p in self.model.named_parameters() if p.requires_grad]  # masters' order, tied once
            state = {name: m.detach() for name, m in zip(names, self.masters)}
            dtype = self.model.config.dtype
            self.model.config.dtype = torch.float32  # config.json says what the file holds
            try:
                self.model.save_pretrained(folder, state_dict=state)
            finally:
                self.model.config.dtype = dtype
        self.tokenizer.save_pretrained(folder)


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise ConfigError(f"training.backend token: needs transformers (`pip install -e .[llm]`): {exc}") from exc
    return transformers


def _load_model(folder: Path, cfg: LmTrainConfig, reference: bool) -> tuple[Any, list[torch.Tensor] | None]:
    """The model in the runtime's dtype and device; for the policy also the checkpoint's parameters
    in float32 (the masters start from the stored values, not from their bf16 rounding).

    Policy and reference are loaded by the same call (``from_pretrained`` in the runtime dtype), so
    at step 0 of a fresh run they are the same numbers, buffers included: casting a float32 model
    to bf16 afterwards also rounds its rotary ``inv_freq`` buffer, which ``from_pretrained`` keeps
    in float32, and gave a KL of 1-2e-4 to the base before any update on the H200."""
    transformers, rt = _transformers(), cfg.runtime
    if not (Path(folder) / "config.json").is_file():
        raise ConfigError(f"{folder}/config.json: not a Hugging Face checkpoint folder (arm {cfg.arm.arm!r})")
    dtype = _DTYPES[rt.dtype]
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(rt.device)
    masters = None
    if reference:
        model.requires_grad_(False)
        model.eval()
        return model, masters
    if dtype == torch.float32:
        masters = [p.detach() for p in model.parameters() if p.requires_grad]
    else:  # the stored float32 values, read by a second load (same parameter order) and dropped
        exact = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        masters = [p.detach().to(rt.device) for p in exact.parameters() if p.requires_grad]
        del exact
    if rt.gradient_checkpointing:
        enable_checkpointing(model)
    return model, masters


def load_seller(folder: Path, cfg: LmTrainConfig, factory: GeneratorFactory | None, *,
                reference: bool = False) -> tuple[HfSeller, NemoEnvSettings, Generate | None]:
    """Load ``folder``; derive the turn tags from its tokenizer (checked by a round trip) and the
    environment settings; build the sampler unless ``reference``."""
    tokenizer = _transformers().AutoTokenizer.from_pretrained(folder)
    sampling_settings = cfg.run_protocol.sampling.self_served_seller
    tags = derive_turn_tags(tokenizer, template_kwargs(sampling_settings.thinking))
    stops = stop_token_ids(tags, tokenizer.eos_token_id)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    model, masters = _load_model(folder, cfg, reference)
    seller = HfSeller(model, tokenizer, stops, int(pad), masters)
    settings = protocol_env_settings(cfg.run_protocol, tags).model_copy(update={"seller_label": f"token:{cfg.arm.arm}"})
    if reference:
        return seller, settings, None
    seq = cfg.run_protocol.training.sequences
    assert seq is not None
    sampling = Decoding.from_protocol(sampling_settings, max_tokens=seq.new_tokens_per_turn)
    if factory is None:
        # one slot per episode of a GRPO step: a validation set larger than that waits for free slots
        # (every training step would otherwise decode the idle rows too: 256 slots for 128 episodes)
        generate = default_generator(seller.model, tokenizer, sampling=sampling, stop_ids=stops,
                                     prefill_tokens=cfg.runtime.micro_batch_tokens,
                                     max_batch=cfg.run_protocol.training.episodes_per_step,
                                     cache_tokens=seq.context_tokens, compile=cfg.runtime.compile_rollout)
    else:
        generate = factory(seller.model, tokenizer, sampling=sampling, stop_ids=stops)
    return seller, settings, generate


def default_generator(model: Any, tokenizer: Any, *, sampling: Decoding, stop_ids: Sequence[int],
                      prefill_tokens: int = 16384, max_batch: int = 128, cache_tokens: int | None = None,
                      sync_every: int = 8, compile: bool = False, deterministic_compile: bool = True,
                      prefill_chunk: int | None = None, matmul_decode: bool = True) -> EpisodeEngine:
    """The rollout engine (``SlotRollout``) on ``negotiation.lm``'s ``SlotDecoder`` with the
    protocol's seller sampling, on CUDA (decode step replayed as a CUDA graph) and on the CPU
    (the same step, eager): ``max_batch`` slots, each a cache of ``cache_tokens`` positions
    (default the model's context), episodes keep their cache across turns; the host reads the
    slots' state every ``sync_every`` decode steps; ``compile``: the decoder's ``torch.compile``
    (``deterministic_compile``: in inductor's deterministic mode, ``SlotDecoder``'s);
    ``prefill_chunk``: prefill in fixed-shape chunks of this many columns, each a graph replay on
    CUDA (0: each feed at its own shape; None: 64 on CUDA, 0 on the CPU, where padding only costs);
    ``matmul_decode``: CUDA decode steps attend through batched matmuls (``SlotDecoder``'s)."""
    try:
        from negotiation.lm import SlotDecoder
    except ImportError as exc:
        raise ConfigError(f"negotiation.lm: the slot decoder cannot be imported ({exc})") from exc
    if sampling.max_tokens is None:
        raise ConfigError("training.sequences.new_tokens_per_turn: the sampler needs a token cap")
    context = cache_tokens or getattr(model.config, "max_position_embeddings", None)
    if not context:
        raise ConfigError("default_generator: the model config has no max_position_embeddings; give cache_tokens")
    temperature = 1.0 if sampling.temperature is None else sampling.temperature
    if prefill_chunk is None:
        prefill_chunk = _CUDA_PREFILL_CHUNK if _on_cuda(model) else 0
    decoder = SlotDecoder(model, slots=max_batch, cache_tokens=int(context), stop_token_ids=list(stop_ids),
                          max_new_tokens=sampling.max_tokens, temperature=temperature, top_k=sampling.top_k,
                          top_p=sampling.top_p, prefill_tokens=prefill_tokens, compile=compile,
                          deterministic_compile=deterministic_compile, prefill_chunk=prefill_chunk or None,
                          matmul_decode=matmul_decode)
    return SlotRollout(decoder, sync_every=sync_every)


_CUDA_PREFILL_CHUNK = 64
"""Columns of a prefill chunk on CUDA: most observations fit one, an opening takes a few dozen."""


def _on_cuda(model: Any) -> bool:
    return next(model.parameters()).device.type == "cuda"


def turn_generator(model: Any, tokenizer: Any, *, sampling: Decoding, stop_ids: Sequence[int],
                   prefill_tokens: int = 16384) -> Generate:
    """The plain ``Generate`` sampler of the reference loop: ``negotiation.lm.BatchGenerator``
    (whole histories prefilled every turn, one decode step per token); a ``GeneratorFactory``."""
    from negotiation.lm import BatchGenerator, GenerationRequest

    if sampling.max_tokens is None:
        raise ConfigError("training.sequences.new_tokens_per_turn: the sampler needs a token cap")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    engine = BatchGenerator(model, pad_token_id=int(pad), stop_token_ids=list(stop_ids), prefill_tokens=prefill_tokens)
    temperature = 1.0 if sampling.temperature is None else sampling.temperature

    def generate(prompts: Sequence[Sequence[int]], seeds: Sequence[int]) -> list[list[int]]:
        requests = [GenerationRequest(prompt_ids=tuple(p), seed=int(s), max_new_tokens=sampling.max_tokens,
                                      temperature=temperature, top_p=sampling.top_p, top_k=sampling.top_k)
                    for p, s in zip(prompts, seeds)]
        return [list(g.token_ids) for g in engine.generate(requests)]

    return generate
