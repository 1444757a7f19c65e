"""Batched generation with a KV cache: one forward pass per decode step for every running request.

``BatchGenerator.generate(requests)`` left-pads the prompts, prefills them (in row chunks that
bound the attention memory), then decodes all unfinished rows together, one token per step,
reusing the model's KV cache; a row leaves the batch (and the cache) when it emits a stop token
or reaches its ``max_new_tokens``. Each request carries its own sampling and seed; the draws are
those of ``negotiation.lm._sampling`` (keyed by seed, token index and token id), so a request's
tokens do not depend on which requests share its batch, up to floating-point rounding of the
batched forward pass (exact in float64; see ``docs/lm.md``).

Works with any transformers causal LM that takes ``attention_mask``, ``position_ids`` and a
``DynamicCache`` (Llama, Qwen3, Gemma families), on CPU and CUDA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field

from negotiation.lm._sampling import sample_tokens


class GenerationRequest(BaseModel):
    """One prompt to continue, with its own decoding settings."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Request format version."""
    prompt_ids: tuple[int, ...] = Field(min_length=1)
    """Prompt token ids (already rendered by the chat template)."""
    seed: int = Field(ge=0, lt=2**63)
    """Seed of this request's draws (the harness derives one per episode, turn and role)."""
    max_new_tokens: int = Field(gt=0)
    """Generation cap, stop token included."""
    temperature: float = Field(default=1.0, ge=0)
    """Sampling temperature; 0 = greedy."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus mass; ``None`` = no top-p."""
    top_k: int | None = Field(default=None, gt=0)
    """Candidates kept; ``None`` = no top-k."""


@dataclass(frozen=True)
class Generation:
    """What one request produced."""

    token_ids: tuple[int, ...]
    """Generated ids, the stop token included when one ended the generation."""
    logprobs: tuple[float, ...]
    """Log-probability of each generated token under the model's raw distribution (temperature 1, no truncation)."""
    finish_reason: Literal["stop", "length"]
    """``stop``: a stop token; ``length``: ``max_new_tokens`` reached."""
    prompt_tokens: int
    """Length of the prompt."""


class ContextTooLongError(ValueError):
    """A prompt plus its token cap exceeds the model's context."""


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids [B, L], attention_mask [B, L])`` with every prompt right-aligned."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt):] = 1
    return ids, mask


def positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids ``[B, L]`` counting only real tokens (padding gets 0)."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)


class BatchGenerator:
    """Generates for many requests at once with one model.

    Args:
        model: a transformers causal LM in eval mode (its device is used).
        pad_token_id: id used for left padding (never attended to).
        stop_token_ids: ids that end a generation (the tokenizer's end-of-turn / eos ids).
        prefill_tokens: padded prompt tokens prefilled per forward pass; rows are prefilled in
            chunks of ``max(1, prefill_tokens // longest prompt)`` to bound attention memory.
    """

    def __init__(self, model: Any, *, pad_token_id: int, stop_token_ids: Sequence[int],
                 prefill_tokens: int = 16384):
        if not stop_token_ids:
            raise ValueError("stop_token_ids: at least one stop token is needed")
        self.model = model
        self.pad_token_id = int(pad_token_id)
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)
        self.prefill_tokens = int(prefill_tokens)
        self.context = getattr(model.config, "max_position_embeddings", None)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def check(self, requests: Sequence[GenerationRequest]) -> None:
        """Raise ``ContextTooLongError`` naming the first request that cannot fit the context."""
        for i, r in enumerate(requests):
            if self.context is not None and len(r.prompt_ids) + r.max_new_tokens > self.context:
                raise ContextTooLongError(f"request {i}: {len(r.prompt_ids)} prompt tokens + max_new_tokens "
                                          f"{r.max_new_tokens} exceed the model's context of {self.context}")

    @torch.inference_mode()
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate for every request; results in request order."""
        if not requests:
            return []
        self.check(requests)
        device = self.device
        ids, mask = left_pad([r.prompt_ids for r in requests], self.pad_token_id)
        ids, mask = ids.to(device), mask.to(device)
        cache, logits = self._prefill(ids, mask)
        rows = _RowParams.of(requests, device)
        stops = torch.tensor(self.stop_token_ids, device=device)
        trace: list[tuple[torch.Tensor, ...]] = []  # per step: (request index, token, logprob, stopped)
        step = 0
        while True:
            tokens, logprobs, stopped = rows.draw(logits, step, stops)
            trace.append((rows.index, tokens, logprobs, stopped))
            done = stopped | (rows.max_new <= step + 1)
            if bool(done.all()):
                break
            if bool(done.any()):
                keep = (~done).nonzero().squeeze(1)
                cache.batch_select_indices(keep)
                rows, mask, tokens = rows.select(keep), mask[keep], tokens[keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            out = self.model(input_ids=tokens[:, None], attention_mask=mask,
                             position_ids=mask.sum(-1, keepdim=True) - 1, past_key_values=cache, use_cache=True)
            logits = out.logits[:, -1, :].float()
            step += 1
        return _assemble(requests, trace)

    def _prefill(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[Any, torch.Tensor]:
        """Run the prompts through the model in row chunks; ``(cache, last-position logits [B, V])``."""
        from transformers import DynamicCache

        rows_per_chunk = max(1, self.prefill_tokens // ids.shape[1])
        caches, logits = [], []
        for start in range(0, ids.shape[0], rows_per_chunk):
            part = slice(start, start + rows_per_chunk)
            cache = DynamicCache(config=self.model.config)
            out = self.model(input_ids=ids[part], attention_mask=mask[part], position_ids=positions(mask[part]),
                             past_key_values=cache, use_cache=True, logits_to_keep=1)
            caches.append(out.past_key_values)
            logits.append(out.logits[:, -1, :].float())
        return _concat_caches(caches), torch.cat(logits)


def _assemble(requests: Sequence[GenerationRequest], trace: list[tuple[torch.Tensor, ...]]) -> list[Generation]:
    """Per-request generations from the per-step trace (one device-to-host copy)."""
    index, tokens, logprobs, stopped = (torch.cat(column).tolist() for column in zip(*trace))
    ids: list[list[int]] = [[] for _ in requests]
    lps: list[list[float]] = [[] for _ in requests]
    finish = ["length"] * len(requests)
    for req, tok, lp, stop in zip(index, tokens, logprobs, stopped):
        ids[req].append(tok)
        lps[req].append(lp)
        if stop:
            finish[req] = "stop"
    return [Generation(tuple(ids[i]), tuple(lps[i]), finish[i], len(r.prompt_ids))  # type: ignore[arg-type]
            for i, r in enumerate(requests)]


def _concat_caches(caches: list[Any]) -> Any:
    """One cache holding the rows of several same-length caches, in order."""
    merged = caches[0]
    if len(caches) > 1:
        for i, layer in enumerate(merged.layers):
            layer.keys = torch.cat([c.layers[i].keys for c in caches])
            layer.values = torch.cat([c.layers[i].values for c in caches])
    return merged


@dataclass
class _RowParams:
    """Per-row sampling tensors of the running batch, and each row's request index."""

    index: torch.Tensor
    seeds: torch.Tensor
    temperature: torch.Tensor
    top_k: torch.Tensor
    top_p: torch.Tensor
    max_new: torch.Tensor

    @classmethod
    def of(cls, requests: Sequence[GenerationRequest], device: torch.device) -> _RowParams:
        def t(values: list[Any], dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        return cls(index=t(list(range(len(requests))), torch.long), seeds=t([r.seed for r in requests], torch.long),
                   temperature=t([r.temperature for r in requests], torch.float32),
                   top_k=t([r.top_k or 0 for r in requests], torch.long),
                   top_p=t([r.top_p or 1.0 for r in requests], torch.float32),
                   max_new=t([r.max_new_tokens for r in requests], torch.long))

    def draw(self, logits: torch.Tensor, step: int, stops: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One decode step's sample of every row: ``(tokens, logprobs, stopped)``, each ``(rows,)``,
        from ``logits`` ``(rows, vocab)`` with each row's own seed, temperature, top-k and top-p."""
        tokens = sample_tokens(logits, seeds=self.seeds, step=step, temperature=self.temperature,
                               top_k=self.top_k, top_p=self.top_p)
        logprobs = torch.log_softmax(logits, dim=-1).gather(1, tokens[:, None]).squeeze(1)
        return tokens, logprobs, torch.isin(tokens, stops)

    def select(self, keep: torch.Tensor) -> _RowParams:
        return _RowParams(*(getattr(self, f)[keep] for f in ("index", "seeds", "temperature", "top_k", "top_p", "max_new")))
