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
from the lengths, update lengths and live flags. Attention reads a *window* of the cache, the
first ``W`` positions, ``W`` a multiple of ``window_block`` just above the longest sequence the
next steps can reach (the host bounds it from the lengths it fed and the steps it queued, without
reading the device), so a step costs what the batch holds, not what the cache could. On CUDA the
step is captured as a CUDA graph per window and ``run(K)`` replays it ``K`` times (launches are
asynchronous: the host is free meanwhile), and with ``prefill_chunk`` each prefill chunk too
(``_slot_prefill``); on the CPU the same step runs eagerly. Draws do not depend on which slots share the
batch, so a sequence gets the tokens of a per-request loop (exactly in float64).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from negotiation.lm._cuda_graph import record_graph
from negotiation.lm._sampling import sample_tokens
from negotiation.lm._slot_attention import slot_attention
from negotiation.lm._slot_cache import slot_cache
from negotiation.lm._slot_prefill import ChunkedPrefill, chunk_feed, row_buckets

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


def compile_options(deterministic: bool = True) -> dict[str, Any]:
    """Inductor options of the compiled step and prefill: its deterministic mode (where this torch
    has one) unless ``deterministic`` is False. Otherwise inductor picks some kernels'
    configurations by timing them on the device, and one that reduces in another order rounds
    differently: two processes compiling the same model (a run and its frozen control sharing a
    GPU) then sample different tokens from identical weights, which pairing them must rule out.
    It is not the only source: with it, such a pair on one H100 still read step-1 training rewards
    0.385 and 0.397 (docs/results/lm-gpu-2026-12-05-eve/), while one process repeats itself."""
    import torch._inductor.config as inductor

    return {"deterministic": True} if deterministic and hasattr(inductor, "deterministic") else {}


class SlotDecoder(ChunkedPrefill):
    """``B`` slots decoding turns continuously with one fixed-shape step.

    Args:
        model: a transformers causal LM (Llama or Gemma3 family, full attention) in eval mode.
        slots: rows of the batch (``B``).
        cache_tokens: positions of each slot's cache (``C``): a sequence never grows past it.
        stop_token_ids: ids that end a turn.
        max_new_tokens: token cap of a turn.
        temperature, top_k, top_p: the sampling of every turn (0 / None / None: off).
        prefill_tokens: padded tokens per prefill forward (rows are fed in chunks within it).
        prefill_chunk: feed in fixed-shape chunks of this many columns, rows padded to a bucket
            (``_slot_prefill``), so that on CUDA each chunk is a captured graph's replay; None: one
            forward per ``prefill_tokens`` of rows at each feed's own shape.
        cuda_graph: capture the step as a CUDA graph on CUDA (eager if the capture fails; ``graph_error``).
        window_block: granularity of the attention window (positions); one graph per window used.
        compile: run the decode step and the prefill forward through ``torch.compile`` (fused
            kernels: a small model's step is bound by its kernel count, eager prefills by Python);
            eager if compiling fails (``compile_error``).
        deterministic_compile: compile in inductor's deterministic mode (``compile_options``);
            False lets inductor time kernel configurations on the device (faster kernels perhaps,
            but not the same tokens from one process to the next).
        matmul_decode: CUDA decode steps attend through two batched matmuls (``_slot_attention``);
            False: through the fused memory-efficient kernel, as prefills do.
    """

    def __init__(self, model: Any, *, slots: int, cache_tokens: int, stop_token_ids: Sequence[int],
                 max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, prefill_tokens: int = 16384, prefill_chunk: int | None = None,
                 cuda_graph: bool = True, window_block: int = 256, compile: bool = False,
                 deterministic_compile: bool = True, matmul_decode: bool = True):
        if slots < 1 or cache_tokens < 2 or max_new_tokens < 1 or not stop_token_ids:
            raise ValueError("SlotDecoder: needs slots >= 1, cache_tokens >= 2, max_new_tokens >= 1, a stop token")
        self.model, self.slots, self.cache_tokens = model, int(slots), int(cache_tokens)
        self.max_new_tokens, self.prefill_tokens = int(max_new_tokens), int(prefill_tokens)
        if prefill_chunk is not None and prefill_chunk < 1:
            raise ValueError(f"SlotDecoder: prefill_chunk={prefill_chunk}: columns per chunk (>= 1), or None")
        self.prefill_chunk = prefill_chunk
        self.window_block = max(1, int(window_block))
        self.matmul_decode = bool(matmul_decode)
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
        self.host_stops = frozenset(int(t) for t in stop_token_ids)  # collect reads these without a device copy
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
        self.host_length = [0] * b
        """Each slot's length as the host last knew it (set by ``feed``, ``collect``, ``release``):
        exact for an idle slot, the length at its feed for a decoding one."""
        self.fed_at = [0] * b
        """``decode_steps`` when each slot's turn started (bounds its growth since)."""
        self.decoding: set[int] = set()
        """Slots fed and not yet collected."""
        self.graphs: dict[int | None, Any] = {}
        """Captured decode step per window (CUDA)."""
        self.prefill_graphs: dict[tuple[int, int | None], Any] = {}
        """Captured prefill chunk per (row bucket, window) (CUDA, with ``prefill_chunk``)."""
        self.row_buckets = row_buckets(b)
        self._prefill_in: dict[int, torch.Tensor] = {}  # a graph's input chunk per bucket, on the device
        self._pool: Any = None  # one memory pool for every graph: they replay one at a time
        self.graph_error: str | None = None
        # captured on first use of a window, when the caller has put the model in eval mode
        self._use_graphs = cuda_graph and dev.type == "cuda"
        self.compile_error: str | None = None
        self._step_fn, self._prefill_fn = self._step, self._prefill_forward
        if compile:
            # the window (an int) and the prefill's [R, T] shapes vary: recompiled once with them
            # symbolic after the first change (dynamo's automatic dynamic shapes)
            options = compile_options(deterministic_compile)
            self._step_fn = torch.compile(self._step, options=options)
            self._prefill_fn = torch.compile(self._prefill_forward, options=options)

    @torch.inference_mode()
    def feed(self, slots: Sequence[int], token_ids: Sequence[Sequence[int]], seeds: Sequence[int]) -> None:
        """Append ``token_ids[i]`` to slot ``slots[i]`` (prefilled after what the slot holds) and
        start a turn there drawing from ``seeds[i]``. Lengths must stay within ``cache_tokens``."""
        if not slots:
            return
        lengths = [self.host_length[s] for s in slots]
        for s, n, ids in zip(slots, lengths, token_ids):
            if s in self.decoding:
                raise ValueError(f"slot {s}: fed while its turn is still decoding")
            if not ids or n + len(ids) > self.cache_tokens:
                raise ValueError(f"slot {s}: {n} cached + {len(ids)} new tokens do not fit {self.cache_tokens}")
        trash = self.cache_tokens
        with slot_attention(self.model, self.matmul_decode):
            if self.prefill_chunk is not None:
                bucket = next(r for r in self.row_buckets if r >= len(slots))
                self._prefill(chunk_feed(slots, token_ids, lengths, chunk=self.prefill_chunk, bucket=bucket,
                                         total_slots=self.slots, trash=trash))
            else:
                per_chunk = max(1, self.prefill_tokens // max(len(ids) for ids in token_ids))
                for start in range(0, len(slots), per_chunk):
                    part = slice(start, start + per_chunk)
                    self._prefill(chunk_feed(slots[part], token_ids[part], lengths[part], chunk=None, bucket=None,
                                             total_slots=self.slots, trash=trash))
        rows = self._to_device(list(slots))
        self.length[rows] += self._to_device([len(ids) for ids in token_ids])
        self.seeds[rows] = self._to_device([int(s) for s in seeds])
        # index_fill_ passes the scalar to the kernel; ``t[rows] = 0`` copies a CPU scalar from
        # pageable memory, which waits for every queued decode step (the host then cannot overlap them)
        self.step.index_fill_(0, rows, 0)
        self.live.index_fill_(0, rows, True)
        for s, ids in zip(slots, token_ids):
            self.host_length[s] += len(ids)
            self.fed_at[s] = self.decode_steps
            self.decoding.add(s)

    def _positions(self, window: int | None) -> torch.Tensor:
        """``[W]`` the positions attention reads (all ``C + 1`` when ``window`` is None)."""
        return self.positions if window is None else self.positions.narrow(0, 0, window)

    def _to_device(self, values: Any) -> torch.Tensor:
        """int64 ``values`` on the device; on CUDA through pinned memory without waiting for the
        queued decode steps (a copy from pageable memory waits for the whole stream)."""
        tensor = values if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=torch.long)
        if self.device.type != "cuda":
            return tensor.to(self.device)
        return tensor.pin_memory().to(self.device, non_blocking=True)

    def _call(self, what: str, compiled: Any, *args: Any) -> None:
        """``compiled(*args)``; on a compile failure, warn, add the reason to ``compile_error``
        and run that function eagerly from then on (same result, more launches)."""
        eager = self._step if what == "step" else self._prefill_forward
        if compiled is eager:
            return eager(*args)
        try:
            return compiled(*args)
        except Exception as exc:  # a model inductor cannot compile still rolls out, eagerly
            reason = f"{what}: {type(exc).__name__}: {exc}"
            self.compile_error = reason if self.compile_error is None else f"{self.compile_error}; {reason}"
            log.warning("torch.compile of the slot %s failed, running it eagerly: %s", what, reason)
            if what == "step":
                self._step_fn = self._step
            else:
                self._prefill_fn = self._prefill_forward
            return eager(*args)

    def _window(self, longest: int) -> int | None:
        """Positions to attend for sequences of at most ``longest`` tokens: a multiple of
        ``window_block`` (None: the whole cache, trash position included)."""
        window = -(-longest // self.window_block) * self.window_block
        return None if window > self.cache_tokens else window

    def _decode_window(self, steps: int) -> int | None:
        """The window for the next ``steps`` decode steps: each decoding slot ends them at most at
        its fed length plus its turn cap, or plus the steps queued since its feed."""
        queued = self.decode_steps + steps
        longest = max((self.host_length[s] + min(queued - self.fed_at[s], self.max_new_tokens)
                       for s in self.decoding), default=1)
        return self._window(longest)

    def _step(self, window: int | None) -> None:
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
        self.cache.index.rows, self.cache.index.positions, self.cache.index.window = None, write[:, None], window
        positions = self._positions(window)
        mask = (positions[None, :] <= self.length[:, None]) & (positions < self.cache_tokens)
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
        window = self._decode_window(steps)
        with slot_attention(self.model, self.matmul_decode):
            if self._use_graphs and window not in self.graphs:
                self.graphs[window] = self._capture(window)
            graph = self.graphs.get(window)
            for _ in range(steps):
                if graph is not None:
                    graph.replay()
                else:
                    self._call("step", self._step_fn, window)
        self.decode_steps += steps

    @torch.inference_mode()
    def collect(self, decoding: set[int]) -> list[TurnEnd]:
        """The slots of ``decoding`` (the caller's live set) whose turn has ended, in slot order."""
        live = self.live.tolist()
        ended = sorted(s for s in decoding if not live[s])
        if not ended:
            return []
        rows = self._to_device(ended)
        counts, tokens, logprobs = self.step[rows].tolist(), self.tokens[rows].tolist(), self.logprobs[rows].tolist()
        out = []
        for s, n, ids, lps in zip(ended, counts, tokens, logprobs):
            self.live_slot_steps += n
            self.host_length[s] += n
            self.decoding.discard(s)
            out.append(TurnEnd(s, ids[:n], lps[:n], ids[n - 1] in self.host_stops))
        return out

    def release(self, slots: Sequence[int]) -> None:
        """Empty ``slots`` (length 0, not live): the next ``feed`` there starts a new sequence."""
        if slots:
            rows = self._to_device(list(slots))
            self.length.index_fill_(0, rows, 0)  # not ``[rows] = 0``: see ``feed``
            self.live.index_fill_(0, rows, False)
            for s in slots:
                self.host_length[s] = 0
                self.decoding.discard(s)

    def _capture(self, window: int | None) -> Any:
        """Record ``_step`` at ``window`` as a CUDA graph (``_record``), every slot idle meanwhile
        (their writes go to the trash position), the state restored after."""
        buffers = (self.length, self.live, self.step, self.logits, self.tokens, self.logprobs)
        saved = [t.clone() for t in buffers]
        self.live.zero_()
        graph = self._record("step", lambda fn: fn(window))
        for buffer, value in zip(buffers, saved):
            buffer.copy_(value)
        return graph

    def _record(self, what: str, call: Any) -> Any:
        """``call(fn)`` (``fn`` the step or the prefill, compiled or not) recorded as a CUDA graph
        after two warm-up calls on a side stream, in the decoder's one memory pool; None (and
        ``graph_error``) if it cannot be captured: the decoder then runs eagerly from here on."""
        if self.graph_error is not None:
            return None

        def current() -> Any:  # read at each call: a warm-up whose compile failed leaves the eager function
            return self._step_fn if what == "step" else self._prefill_fn

        try:
            with torch.inference_mode():
                self._pool = self._pool or torch.cuda.graph_pool_handle()
                return record_graph(lambda: call(current()), pool=self._pool,
                                    warm=lambda: call(lambda *args: self._call(what, current(), *args)))[0]
        except Exception as exc:  # a model whose step cannot be captured still decodes, eagerly
            torch.cuda.synchronize()
            self.graph_error = f"{what}: {type(exc).__name__}: {exc}"
            log.warning("CUDA-graph capture of the slot %s failed, running eagerly: %s", what, self.graph_error)
            return None
