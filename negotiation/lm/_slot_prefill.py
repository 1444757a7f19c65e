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
from typing import Sequence

import torch

__all__ = ["ChunkedFeed", "chunk_feed", "row_buckets"]


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
        return (self.packed.shape[-1] - 2) // 2


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
