"""Continuous batching over fixed slots: each sequence keeps one cache row for its whole life.

``SlotDecoder`` holds ``B`` slots of a ``slot_cache``. A caller ``feed``s tokens to some slots
(a prompt, or the new tokens of a multi-turn dialogue: only those are prefilled, the slot's
earlier keys and values stay in its cache), which starts a *turn* there: the slot then decodes,
one token per ``step``, until it samples a stop token or reaches ``max_new_tokens``, while other
slots are at other turns, other lengths, or idle. ``run(K)`` advances the whole batch ``K`` steps
without reading anything back; ``collect()`` (one host sync) returns the slots whose turn ended
with their tokens and log-probs.

The decode step has one fixed shape and does everything on the device: sample every live slot's
token from the last logits (``_sampling``'s Gumbel-max draw keyed by seed, per-slot token index
and token id, top-k at a fixed width), note its log-prob under the raw distribution, write it to
the slot's cache at the slot's length (idle slots write to the trash position), build the mask
from the lengths, update lengths and live flags. On CUDA that step is captured once as a CUDA
graph and ``run(K)`` replays it ``K`` times (launches are asynchronous: the host is free
meanwhile); on the CPU the same step runs eagerly. Draws do not depend on which slots share the
batch, so a sequence gets the tokens of a per-request loop (exactly in float64).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from negotiation.lm._sampling import sample_tokens
from negotiation.lm._slot_cache import slot_cache

__all__ = ["SlotDecoder", "TurnEnd"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnEnd:
    """A slot whose turn ended: its generated tokens (the stop token included when one ended it)."""

    slot: int
    token_ids: list[int]
    logprobs: list[float]
    """Log-probability of each token under the model's raw distribution (temperature 1, untruncated)."""
    stopped: bool
    """True: a stop token ended the turn; False: ``max_new_tokens`` did."""


class SlotDecoder:
    """``B`` slots decoding turns continuously with one fixed-shape step.

    Args:
        model: a transformers causal LM (Llama or Gemma3 family, full attention) in eval mode.
        slots: rows of the batch (``B``).
        cache_tokens: positions of each slot's cache (``C``): a sequence never grows past it.
        stop_token_ids: ids that end a turn.
        max_new_tokens: token cap of a turn.
        temperature, top_k, top_p: the sampling of every turn (0 / None / None: off).
        prefill_tokens: padded tokens per prefill forward (rows are fed in chunks within it).
        cuda_graph: capture the step as a CUDA graph on CUDA (eager if the capture fails; ``graph_error``).
    """

    def __init__(self, model: Any, *, slots: int, cache_tokens: int, stop_token_ids: Sequence[int],
                 max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, prefill_tokens: int = 16384, cuda_graph: bool = True):
        if slots < 1 or cache_tokens < 2 or max_new_tokens < 1 or not stop_token_ids:
            raise ValueError("SlotDecoder: needs slots >= 1, cache_tokens >= 2, max_new_tokens >= 1, a stop token")
        self.model, self.slots, self.cache_tokens = model, int(slots), int(cache_tokens)
        self.max_new_tokens, self.prefill_tokens = int(max_new_tokens), int(prefill_tokens)
        param = next(model.parameters())
        self.device, dtype = param.device, param.dtype
        b, dev = self.slots, self.device
        vocab = model.get_output_embeddings().weight.shape[0]
        self.width = vocab if not top_k else min(int(top_k), vocab)
        self.cache = slot_cache(model.config, rows=b, positions=self.cache_tokens, dtype=dtype, device=dev)
        self.temperature = torch.full((b,), float(temperature), dtype=torch.float32, device=dev)
        self.top_k = torch.full((b,), int(top_k or 0), dtype=torch.long, device=dev)
        self.top_p = torch.full((b,), float(top_p or 1.0), dtype=torch.float32, device=dev)
        self.stops = torch.tensor(sorted({int(t) for t in stop_token_ids}), dtype=torch.long, device=dev)
        self.length = torch.zeros(b, dtype=torch.long, device=dev)
        """``[B]`` tokens in each slot's cache (the next write position)."""
        self.live = torch.zeros(b, dtype=torch.bool, device=dev)
        """``[B]`` which slots are decoding a turn."""
        self.step = torch.zeros(b, dtype=torch.long, device=dev)
        """``[B]`` tokens generated in each slot's current turn (the draw's token index)."""
        self.seeds = torch.zeros(b, dtype=torch.long, device=dev)
        self.logits = torch.zeros((b, vocab), dtype=dtype, device=dev)
        """``[B, V]`` each slot's next-token logits."""
        self.tokens = torch.zeros((b, self.max_new_tokens + 1), dtype=torch.long, device=dev)
        """``[B, N + 1]`` the turn's tokens per slot; column ``N`` takes idle slots' writes."""
        self.logprobs = torch.zeros((b, self.max_new_tokens + 1), dtype=torch.float64, device=dev)
        self.positions = torch.arange(self.cache_tokens + 1, device=dev)
        self.decode_steps = 0
        """Decode steps run so far (each over all ``B`` slots)."""
        self.live_slot_steps = 0
        """Sum over collected turns of their tokens: live slot-steps, for the share of live rows."""
        self.graph: Any = None
        self.graph_error: str | None = None
        # captured on the first run, when the caller has put the model in eval mode
        self._capture_pending = cuda_graph and dev.type == "cuda"

    @torch.inference_mode()
    def feed(self, slots: Sequence[int], token_ids: Sequence[Sequence[int]], seeds: Sequence[int]) -> None:
        """Append ``token_ids[i]`` to slot ``slots[i]`` (prefilled after what the slot holds) and
        start a turn there drawing from ``seeds[i]``. Lengths must stay within ``cache_tokens``."""
        if not slots:
            return
        dev, lengths = self.device, self.length[torch.tensor(list(slots), device=self.device)].tolist()
        for s, n, ids in zip(slots, lengths, token_ids):
            if not ids or n + len(ids) > self.cache_tokens:
                raise ValueError(f"slot {s}: {n} cached + {len(ids)} new tokens do not fit {self.cache_tokens}")
        width = max(len(ids) for ids in token_ids)
        per_chunk = max(1, self.prefill_tokens // width)
        for start in range(0, len(slots), per_chunk):
            part = slice(start, start + per_chunk)
            self._prefill(list(slots[part]), list(token_ids[part]), lengths[part])
        rows = torch.tensor(list(slots), dtype=torch.long, device=dev)
        self.length[rows] += torch.tensor([len(ids) for ids in token_ids], dtype=torch.long, device=dev)
        self.seeds[rows] = torch.tensor([int(s) for s in seeds], dtype=torch.long, device=dev)
        self.step[rows] = 0
        self.live[rows] = True

    def _prefill(self, slots: list[int], token_ids: list[Sequence[int]], lengths: list[int]) -> None:
        """One left-padded forward of ``[R, T]`` new tokens at each slot's own positions; the last
        column's logits become the slots' next-token logits."""
        dev, width, trash = self.device, max(len(ids) for ids in token_ids), self.cache_tokens
        ids = torch.zeros((len(slots), width), dtype=torch.long)
        pos = torch.full((len(slots), width), trash, dtype=torch.long)
        for r, (row, n) in enumerate(zip(token_ids, lengths)):
            ids[r, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
            pos[r, width - len(row):] = torch.arange(n, n + len(row))
        ids, pos, rows = ids.to(dev), pos.to(dev), torch.tensor(slots, dtype=torch.long, device=dev)
        # query j of a row sees the row's cache up to its own position (padding queries: position 0 on)
        seen = torch.where(pos == trash, 0, pos)
        mask = (self.positions[None, None, :] <= seen[:, :, None]) & (self.positions < trash)
        self.cache.index.rows, self.cache.index.positions = rows, pos
        out = self.model(input_ids=ids, attention_mask=mask[:, None], position_ids=seen, past_key_values=self.cache,
                         use_cache=True, logits_to_keep=1)
        self.logits[rows] = out.logits[:, -1, :]

    def _step(self) -> None:
        """One decode step of every slot, all on the device (what the CUDA graph records)."""
        active = self.live
        sampled = sample_tokens(self.logits.float(), seeds=self.seeds, step=self.step, temperature=self.temperature,
                                top_k=self.top_k, top_p=self.top_p, width=self.width)
        # log-probs in float64 when the model is (the float32 cast above only feeds the draw)
        raw = self.logits if self.logits.dtype == torch.float64 else self.logits.float()
        logprob = torch.log_softmax(raw, dim=-1).gather(1, sampled[:, None]).squeeze(1)
        column = torch.where(active, self.step, self.max_new_tokens)[:, None]
        self.tokens.scatter_(1, column, sampled[:, None])
        self.logprobs.scatter_(1, column, logprob.to(torch.float64)[:, None])
        write = torch.where(active, self.length, self.cache_tokens)
        self.cache.index.rows, self.cache.index.positions = None, write[:, None]
        mask = (self.positions[None, :] <= self.length[:, None]) & (self.positions < self.cache_tokens)
        out = self.model(input_ids=sampled[:, None], attention_mask=mask[:, None, None, :],
                         position_ids=self.length[:, None], past_key_values=self.cache, use_cache=True)
        self.logits.copy_(out.logits[:, -1, :])
        grown = active.long()
        self.length.add_(grown)
        self.step.add_(grown)
        ended = (sampled[:, None] == self.stops[None, :]).any(1) | (self.step >= self.max_new_tokens)
        self.live.copy_(active & ~ended)

    @torch.inference_mode()
    def run(self, steps: int) -> None:
        """Advance every slot ``steps`` decode steps (CUDA: graph replays, queued without a sync)."""
        if self._capture_pending:
            self._capture_pending = False
            self._capture()
        for _ in range(steps):
            if self.graph is not None:
                self.graph.replay()
            else:
                self._step()
        self.decode_steps += steps

    @torch.inference_mode()
    def collect(self, decoding: set[int]) -> list[TurnEnd]:
        """The slots of ``decoding`` (the caller's live set) whose turn has ended, in slot order."""
        live = self.live.tolist()
        ended = sorted(s for s in decoding if not live[s])
        if not ended:
            return []
        rows = torch.tensor(ended, dtype=torch.long, device=self.device)
        counts, tokens, logprobs = self.step[rows].tolist(), self.tokens[rows].tolist(), self.logprobs[rows].tolist()
        stops = set(self.stops.tolist())
        out = []
        for s, n, ids, lps in zip(ended, counts, tokens, logprobs):
            self.live_slot_steps += n
            out.append(TurnEnd(s, ids[:n], lps[:n], ids[n - 1] in stops))
        return out

    def release(self, slots: Sequence[int]) -> None:
        """Empty ``slots`` (length 0, not live): the next ``feed`` there starts a new sequence."""
        if slots:
            rows = torch.tensor(list(slots), dtype=torch.long, device=self.device)
            self.length[rows] = 0
            self.live[rows] = False

    def _capture(self) -> None:
        """Record ``_step`` as a CUDA graph after warm-up steps on a side stream, every slot idle
        meanwhile (their writes go to the trash position), the state restored after."""
        saved = [t.clone() for t in (self.length, self.live, self.step, self.logits, self.tokens, self.logprobs)]
        self.live.zero_()
        try:
            with torch.inference_mode():
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):
                        self._step()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    self._step()
            self.graph = graph
        except Exception as exc:  # a model whose step cannot be captured still decodes, eagerly
            torch.cuda.synchronize()
            self.graph_error = f"{type(exc).__name__}: {exc}"
            log.warning("CUDA-graph capture of the slot decode step failed, decoding eagerly: %s", self.graph_error)
        for buffer, value in zip((self.length, self.live, self.step, self.logits, self.tokens, self.logprobs), saved):
            buffer.copy_(value)
