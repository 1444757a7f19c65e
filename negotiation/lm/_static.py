"""Batched generation with fixed shapes: a static KV cache and, on CUDA, a CUDA-graph decode step.

``BatchGenerator`` decodes with a growing ``DynamicCache`` and drops finished rows, so every decode
step has new shapes and launches each of the model's small kernels from Python: on an H200 a
decode step of the ladder's models costs 60-100 ms whatever their size (``docs/lm.md``), all of it
launch overhead. ``StaticBatchGenerator`` keeps every shape of the decode step fixed:

- a ``StaticCache`` of ``max_batch`` rows × ``C`` positions, ``C`` the call's prompt width plus
  its token cap rounded up to a multiple of ``bucket_tokens`` (at most ``cache_tokens``): one cache
  and one graph per bucket, allocated on first use and reused by every later call of that bucket
  (prompts are prefilled as in ``BatchGenerator`` and their keys and values copied into its first
  positions). Buckets keep the decode step's attention, which reads (and for grouped-query
  attention with a mask, first expands) every cache position, proportional to the context in use;
- an explicit ``[max_batch, 1, 1, C]`` boolean attention mask (prompt padding and the cache
  positions not yet written are masked out), so the model builds no mask of its own;
- finished rows and the rows a call does not use stay in the batch (their tokens are discarded;
  an unused row attends to position 0 only, so its arithmetic stays finite).

On CUDA the decode forward is captured once as a CUDA graph and replayed at every step: one
launch per token instead of hundreds. The inputs of a step (token, position, mask column, cache
position) are written in place into the graph's buffers; the model's weights are read where they
live, so in-place optimizer updates are seen by the next replay. On the CPU the same fixed-shape
step runs eagerly (that is what the tests compare with the per-request reference loop).

Sampling is ``negotiation.lm._sampling``'s, per row, so a request's draws are those of
``BatchGenerator`` up to floating-point rounding of the differently shaped forward passes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from negotiation.lm._cuda_graph import record_graph
from negotiation.lm._generate import (
    BatchGenerator, ContextTooLongError, Generation, GenerationRequest, _assemble, _RowParams, left_pad,
)

__all__ = ["StaticBatchGenerator"]

log = logging.getLogger(__name__)


@dataclass
class _Buffers:
    """The fixed-shape inputs and state of the decode step (addresses never change)."""

    cache: Any
    ids: torch.Tensor
    """``[B, 1]`` int64: each row's last token."""
    positions: torch.Tensor
    """``[B, 1]`` int64: each row's position id for that token."""
    mask: torch.Tensor
    """``[B, 1, 1, C]`` bool: which cache positions each row attends to."""
    cache_position: torch.Tensor
    """``[1]`` int64: the cache slot the step writes."""
    graph: Any = None
    logits: torch.Tensor | None = None
    """The graph's output ``[B, V]`` (overwritten by every replay)."""


class StaticBatchGenerator(BatchGenerator):
    """``BatchGenerator`` with a fixed-shape decode step (static cache; a CUDA graph on CUDA).

    Args:
        model, pad_token_id, stop_token_ids, prefill_tokens: as ``BatchGenerator``.
        max_batch: rows of the decode step; larger calls run in chunks of this many requests.
        cache_tokens: most positions of a static cache (prompt plus new tokens must fit); default
            the model's context.
        bucket_tokens: cache lengths are multiples of this (one cache and graph per length used).
        cuda_graph: capture the decode step as a CUDA graph (CUDA only; if the capture fails the
            step runs eagerly and ``graph_error`` says why).
    """

    def __init__(self, model: Any, *, pad_token_id: int, stop_token_ids: Sequence[int], prefill_tokens: int = 16384,
                 max_batch: int = 128, cache_tokens: int | None = None, bucket_tokens: int = 512,
                 cuda_graph: bool = True):
        super().__init__(model, pad_token_id=pad_token_id, stop_token_ids=stop_token_ids,
                         prefill_tokens=prefill_tokens)
        if max_batch < 1:
            raise ValueError(f"max_batch={max_batch}: need at least one row")
        self.max_batch = int(max_batch)
        self.cache_tokens = int(cache_tokens or self.context or 0)
        if self.cache_tokens < 2:
            raise ValueError("cache_tokens: the model config has no max_position_embeddings; give cache_tokens")
        if bucket_tokens < 1:
            raise ValueError(f"bucket_tokens={bucket_tokens}: need at least 1")
        self.bucket_tokens = int(bucket_tokens)
        self.cuda_graph = cuda_graph
        self.graph_error: str | None = None
        """Why a CUDA-graph capture failed (then that bucket's step runs eagerly), or None."""
        self._buffers_by_length: dict[int, _Buffers] = {}

    @property
    def graphs(self) -> int:
        """CUDA graphs captured so far (one per cache length used)."""
        return sum(b.graph is not None for b in self._buffers_by_length.values())

    def cache_length(self, needed: int) -> int:
        """The bucket holding ``needed`` positions."""
        return min(self.cache_tokens, -(-needed // self.bucket_tokens) * self.bucket_tokens)

    def check(self, requests: Sequence[GenerationRequest]) -> None:
        super().check(requests)
        for i, r in enumerate(requests):
            if len(r.prompt_ids) + r.max_new_tokens > self.cache_tokens:
                raise ContextTooLongError(f"request {i}: {len(r.prompt_ids)} prompt tokens + max_new_tokens "
                                          f"{r.max_new_tokens} exceed the static cache of {self.cache_tokens}")

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate for every request (chunks of ``max_batch``); results in request order."""
        self.check(requests)
        out: list[Generation] = []
        for start in range(0, len(requests), self.max_batch):
            out += self._generate(requests[start:start + self.max_batch])
        return out

    @torch.inference_mode()
    def _generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        device, n = self.device, len(requests)
        ids, prompt_mask = left_pad([r.prompt_ids for r in requests], self.pad_token_id)
        ids, prompt_mask = ids.to(device), prompt_mask.to(device)
        width = ids.shape[1]
        prefilled, logits = self._prefill(ids, prompt_mask)
        buf = self._buffers(self.cache_length(width + max(r.max_new_tokens for r in requests)))
        self._load_prompts(buf, prefilled, prompt_mask)
        del prefilled
        rows = _RowParams.of(requests, device)
        stops = torch.tensor(self.stop_token_ids, device=device)
        start_pos = prompt_mask.sum(-1)
        done = torch.zeros(n, dtype=torch.bool, device=device)
        trace: list[tuple[torch.Tensor, ...]] = []
        step = 0
        while True:
            tokens, logprobs, stopped = rows.draw(logits, step, stops)
            trace.append((~done, tokens, logprobs, stopped))
            done = done | stopped | (rows.max_new <= step + 1)
            if bool(done.all()):
                break
            buf.ids[:n, 0] = tokens
            buf.positions[:n, 0] = start_pos + step
            buf.mask[:, 0, 0, width + step] = True
            buf.cache_position.fill_(width + step)
            logits = self._decode(buf)[:n].float()
            step += 1
        return _assemble(requests, _live_trace(rows.index, trace))

    def _buffers(self, length: int) -> _Buffers:
        """The decode step's buffers for a cache of ``length`` positions (allocated, and the graph
        captured, on first use)."""
        if length not in self._buffers_by_length:
            from transformers import StaticCache

            c, device, b = self.model.config, self.device, self.max_batch
            dtype = next(self.model.parameters()).dtype
            cache = StaticCache(config=c, max_cache_len=length)
            head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
            cache.early_initialization(batch_size=b, num_heads=c.num_key_value_heads, head_dim=head_dim,
                                       dtype=dtype, device=device)
            mask = torch.zeros((b, 1, 1, length), dtype=torch.bool, device=device)
            mask[:, 0, 0, 0] = True
            buf = _Buffers(cache, torch.full((b, 1), self.pad_token_id, dtype=torch.long, device=device),
                           torch.zeros((b, 1), dtype=torch.long, device=device), mask,
                           torch.zeros(1, dtype=torch.long, device=device))
            if self.cuda_graph and device.type == "cuda":
                self._capture(buf)
            self._buffers_by_length[length] = buf
        return self._buffers_by_length[length]

    def _forward(self, buf: _Buffers) -> torch.Tensor:
        out = self.model(input_ids=buf.ids, attention_mask=buf.mask, position_ids=buf.positions,
                         cache_position=buf.cache_position, past_key_values=buf.cache, use_cache=True)
        return out.logits[:, -1, :]

    def _capture(self, buf: _Buffers) -> None:
        """Record the decode forward as a CUDA graph (after two eager warm-up steps on a side stream)."""
        try:
            buf.graph, buf.logits = record_graph(lambda: self._forward(buf))
        except Exception as exc:  # a model whose forward cannot be captured still generates, eagerly
            torch.cuda.synchronize()
            self.graph_error = f"{type(exc).__name__}: {exc}"
            buf.graph, buf.logits = None, None
            log.warning("CUDA-graph capture of the decode step failed, decoding eagerly: %s", self.graph_error)

    def _decode(self, buf: _Buffers) -> torch.Tensor:
        if buf.graph is None:
            return self._forward(buf)
        buf.graph.replay()
        assert buf.logits is not None
        return buf.logits

    def _load_prompts(self, buf: _Buffers, prefilled: Any, prompt_mask: torch.Tensor) -> None:
        """Copy the prefilled keys and values into the static cache; reset the mask and counters."""
        n, width = prompt_mask.shape
        for static, dynamic in zip(buf.cache.layers, prefilled.layers):
            static.keys[:n, :, :width].copy_(dynamic.keys)
            static.values[:n, :, :width].copy_(dynamic.values)
            static.cumulative_length.fill_(width)
        buf.mask.zero_()
        buf.mask[:n, 0, 0, :width] = prompt_mask.bool()
        buf.mask[n:, 0, 0, 0] = True  # rows this call does not use attend to one position: finite arithmetic
        buf.ids.fill_(self.pad_token_id)
        buf.positions.zero_()


def _live_trace(index: torch.Tensor, trace: list[tuple[torch.Tensor, ...]]) -> list[tuple[torch.Tensor, ...]]:
    """Per step, the entries of the rows still generating at that step, as ``_assemble`` reads them."""
    live, tokens, logprobs, stopped = (torch.stack(column) for column in zip(*trace))  # [steps, n]
    keep = live.reshape(-1)
    rows = index.expand(live.shape[0], -1).reshape(-1)
    return [(rows[keep], tokens.reshape(-1)[keep], logprobs.reshape(-1)[keep], stopped.reshape(-1)[keep])]
