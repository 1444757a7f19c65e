"""The layout of a slot decoder's prefill: the new tokens of some slots as fixed-shape chunks.

A continuous batch feeds a few slots at a time (the turns that ended since the last sync) with a
few dozen new tokens each, at every sync. Launched from Python at a new ``[rows, width]`` shape
each time, that prefill cost the host milliseconds per sync, more than the decode steps it ran
beside. Laid out at fixed shapes instead, ``[R, T]`` with ``R`` one of a few row buckets and ``T``
a fixed chunk of columns, each chunk is one replay of a CUDA graph captured once per bucket and
attention window (``SlotDecoder(prefill_chunk=T)``).

The layout (``chunk_feed``): each fed row's tokens are right-aligned in ``ceil(width / T)``
chunks of ``T`` columns, at the row's own cache positions; padding columns sit at the trash
position. So every fed row's last token is the last column of the last chunk, which alone sets
the rows' next-token logits (``final``). Rows added to fill a bucket are other slots, each once,
with every column padding and ``final`` 0: they write only to their trash position and keep
their logits. At the bucket of every slot, batch row ``b`` is slot ``b`` (no gather of the cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

__all__ = ["ChunkedFeed", "ChunkedPrefill", "chunk_feed", "row_buckets"]


def row_buckets(slots: int, smallest: int = 8) -> list[int]:
    """Row counts a chunk is padded to: powers of two from ``smallest`` below ``slots``, then ``slots``."""
    buckets, rows = [], smallest
    while rows < slots:
        buckets.append(rows)
        rows *= 2
    return buckets + [slots]


@dataclass(frozen=True)
class ChunkedFeed:
    """A feed laid out as ``N`` chunks of ``[R, T]`` tokens."""

    packed: torch.Tensor
    """``[N, R, 2T + 2]`` int64 per chunk and batch row: ``T`` token ids, ``T`` cache positions
    (the trash position for padding), the row's cache row, and 1 where the chunk sets the row's logits."""
    identity: bool
    """Batch row ``b`` is cache row ``b`` (the forward needs no row index)."""
    longest: int
    """The longest fed sequence after the feed (cached plus new tokens): the attention window's bound."""

    @property
    def columns(self) -> int:
        return _columns(self.packed)


def _columns(packed: torch.Tensor) -> int:
    """``T`` of a packed chunk (or chunks): its last dimension is ``2T + 2``."""
    return (packed.shape[-1] - 2) // 2


def chunk_feed(slots: Sequence[int], token_ids: Sequence[Sequence[int]], lengths: Sequence[int], *,
               chunk: int | None, bucket: int | None, total_slots: int, trash: int) -> ChunkedFeed:
    """Lay out ``token_ids[i]`` after ``lengths[i]`` cached tokens of slot ``slots[i]``.

    ``chunk``: columns per chunk (None: one chunk as wide as the longest feed). ``bucket``: rows
    per chunk, at least ``len(slots)`` (None: exactly the fed rows); the bucket of all
    ``total_slots`` puts each slot at its own row. ``trash``: the cache's trash position.
    """
    width = max(len(ids) for ids in token_ids)
    columns = width if chunk is None else int(chunk)
    chunks = -(-width // columns)
    full = chunks * columns
    rows = len(slots) if bucket is None else int(bucket)
    if rows < len(slots):
        raise ValueError(f"chunk_feed: {len(slots)} fed slots do not fit a bucket of {rows} rows")
    identity = rows == total_slots and bucket is not None
    if identity:
        order = list(range(total_slots))
    else:  # the fed slots first, then other slots (each once) to fill the bucket
        fed = set(slots)
        order = list(slots) + [s for s in range(total_slots) if s not in fed][:rows - len(slots)]
    row_of = {s: r for r, s in enumerate(order)}
    ids = torch.zeros((rows, full), dtype=torch.long)
    pos = torch.full((rows, full), trash, dtype=torch.long)
    final = torch.zeros(rows, dtype=torch.long)
    for s, new, n in zip(slots, token_ids, lengths):
        r = row_of[s]
        ids[r, full - len(new):] = torch.tensor(list(new), dtype=torch.long)
        pos[r, full - len(new):] = torch.arange(n, n + len(new))
        final[r] = 1
    packed = torch.empty((chunks, rows, 2 * columns + 2), dtype=torch.long)
    packed[:, :, :columns] = ids.view(rows, chunks, columns).transpose(0, 1)
    packed[:, :, columns:2 * columns] = pos.view(rows, chunks, columns).transpose(0, 1)
    packed[:, :, -2] = torch.tensor(order, dtype=torch.long)
    packed[:, :, -1] = 0
    packed[-1, :, -1] = final
    longest = max(n + len(new) for new, n in zip(token_ids, lengths))
    return ChunkedFeed(packed, identity, longest)


class ChunkedPrefill:
    """``SlotDecoder``'s prefill, one ``ChunkedFeed`` at a time: the decoder's model, slot cache,
    ``logits``, ``cache_tokens``, ``prefill_chunk``, its graph bookkeeping (``prefill_graphs``,
    ``_prefill_in``, ``_use_graphs``, ``_record``) and its compile fallback (``_call``,
    ``_prefill_fn``) are the decoder's (``_slots.py``)."""

    model: Any
    cache: Any
    logits: torch.Tensor
    cache_tokens: int
    prefill_chunk: int | None
    prefill_graphs: dict[tuple[int, int | None], Any]
    _prefill_in: dict[int, torch.Tensor]
    _use_graphs: bool
    _prefill_fn: Any
    device: torch.device

    def _prefill(self, feed: ChunkedFeed) -> None:
        """Forward each chunk of ``feed`` in turn (its last sets the fed slots' next-token logits):
        a graph replay per chunk when the chunks have a fixed shape on CUDA, else one call each."""
        window, (chunks, rows, _) = self._window(feed.longest), feed.packed.shape
        if self.prefill_chunk is None or not self._use_graphs:
            packed = self._to_device(feed.packed)
            for c in range(chunks):
                self._call("prefill", self._prefill_fn, *self._unpack(packed[c], feed.identity), window)
            return
        packed = feed.packed.pin_memory()  # one pinned copy; each chunk's upload reads its slice
        static = self._prefill_in.get(rows)
        if static is None:
            static = self._prefill_in[rows] = torch.zeros(feed.packed.shape[1:], dtype=torch.long, device=self.device)
        key = (rows, window)
        if key not in self.prefill_graphs:
            self.prefill_graphs[key] = self._capture_prefill(static, feed.identity, window)
        graph = self.prefill_graphs[key]
        for c in range(chunks):
            static.copy_(packed[c], non_blocking=True)
            if graph is not None:
                graph.replay()
            else:
                self._call("prefill", self._prefill_fn, *self._unpack(static, feed.identity), window)

    def _unpack(self, packed: torch.Tensor, identity: bool) -> tuple[torch.Tensor, ...]:
        """``(ids, positions, rows or None, final)`` views of one ``[R, 2T + 2]`` chunk."""
        columns = _columns(packed)
        rows = None if identity else packed[:, -2]
        return packed[:, :columns], packed[:, columns:2 * columns], rows, packed[:, -1]

    def _prefill_forward(self, ids: torch.Tensor, pos: torch.Tensor, rows: torch.Tensor | None, final: torch.Tensor,
                         window: int | None) -> None:
        """The prefill's device part: ``[R, T]`` tokens at ``[R, T]`` cache positions of cache rows
        ``[R]`` (None: row ``b`` is slot ``b``); rows where ``final[R]`` is nonzero take the last
        column's logits as their next-token logits, the others keep theirs."""
        trash = self.cache_tokens
        positions = self._positions(window)
        # query j of a row sees the row's cache up to its own position (padding queries: position 0 on)
        seen = torch.where(pos == trash, 0, pos)
        mask = (positions[None, None, :] <= seen[:, :, None]) & (positions < trash)
        self.cache.index.rows, self.cache.index.positions, self.cache.index.window = rows, pos, window
        out = self.model(input_ids=ids, attention_mask=mask[:, None], position_ids=seen, past_key_values=self.cache,
                         use_cache=True, logits_to_keep=1)
        sets = final[:, None] != 0
        if rows is None:
            self.logits.copy_(torch.where(sets, out.logits[:, -1, :], self.logits))
        else:
            self.logits[rows] = torch.where(sets, out.logits[:, -1, :], self.logits[rows])

    def _capture_prefill(self, static: torch.Tensor, identity: bool, window: int | None) -> Any:
        """Record the prefill of the chunk in ``static`` at ``window`` as a CUDA graph (``_record``),
        on a chunk of padding meanwhile: writes to the trash position, every row's logits kept."""
        ids, pos, _, final = self._unpack(static, identity=False)
        ids.zero_()
        pos.fill_(self.cache_tokens)
        final.zero_()
        static[:, -2] = torch.arange(static.shape[0], device=self.device)
        return self._record("prefill", lambda fn: fn(*self._unpack(static, identity), window))
