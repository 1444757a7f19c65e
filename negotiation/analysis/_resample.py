"""Fast exact cluster resampling: tuple tables decoded from raw 64-bit words.

A resample of K clusters is K independent uniform picks of a cluster. The sum of t
picks is one uniform pick from the K^t table of t-fold sums, so a resample is
``K // t`` picks from that table plus ``K % t`` single picks: t times fewer random
indices and gathers, with exactly the same distribution. Indices are read as
``bits``-wide fields of raw words from the analysis Generator and accepted when below
the table size (rejection sampling: exact, no modulo bias). Every row owns a fixed
slice of words, so rows decode independently and deterministically; a row whose slice
runs out of accepted fields — odds below 1e-12 by construction — is redrawn afterwards,
in row order. The rows are split into ``CHUNKS`` fixed blocks, each drawing its words
from a child Generator seeded by the analysis Generator, so blocks run on parallel
threads and the draws do not depend on how many cores the machine has.

Both decoders read the words ``child.integers`` draws with the same rules, so the numba
kernel and the numpy decoder agree to floating-point summation order; numpy is used when
numba is not installed.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

TABLE_LIMIT = 2**12
"""Largest tuple table (entries): 32 KiB of float64 stays in the L1 cache."""
SPARE_SIGMAS = 8.0
"""Fields reserved per row beyond the expected need, in standard deviations."""
NUMPY_BLOCK_ROWS = 8192
"""Rows per block in the numpy decoder, bounding its temporary arrays."""
CHUNKS = 4
"""Fixed number of row blocks (one child Generator each); part of the stream layout."""


@dataclass(frozen=True)
class Phase:
    """One kind of pick within a row: ``picks`` indices into a table of ``size`` sums."""

    size: int
    picks: int
    bits: int
    words: int

    @property
    def per_word(self) -> int:
        return 64 // self.bits


def _phase(size: int, picks: int) -> Phase:
    bits = max(1, (size - 1).bit_length())
    acceptance = size / 2**bits
    mean = picks / acceptance
    spread = math.sqrt(picks * (1.0 - acceptance)) / acceptance
    capacity = picks if acceptance == 1.0 else math.ceil(mean + SPARE_SIGMAS * spread) + 1
    words = max(1, -(-capacity // (64 // bits))) if picks else 0
    return Phase(size=size, picks=picks, bits=bits, words=words)


def plan_phases(num_clusters: int) -> tuple[Phase, Phase, int]:
    """``(tuple phase, single phase, t)`` for resampling ``num_clusters`` clusters."""
    t = 1
    while num_clusters ** (t + 1) <= TABLE_LIMIT and t + 1 <= num_clusters:
        t += 1
    return _phase(num_clusters**t, num_clusters // t), _phase(num_clusters, num_clusters % t), t


def tuple_table(values: np.ndarray, t: int, bits: int) -> np.ndarray:
    """All t-fold sums of ``values`` (index = base-K digits), zero-padded to 2**bits."""
    table = values
    for _ in range(t - 1):
        table = (table[:, None] + values[None, :]).ravel()
    padded = np.zeros(2**bits, dtype=values.dtype)
    padded[: table.size] = table
    return padded


def decode_numpy(words: np.ndarray, table: np.ndarray, phase: Phase, out: np.ndarray, short: np.ndarray) -> None:
    """Add each row's picks to ``out``; flag rows whose words ran short (reference decoder)."""
    rows = out.shape[0]
    shifts = (np.arange(phase.per_word, dtype=np.uint64) * np.uint64(phase.bits))[None, None, :]
    mask = np.uint64(2**phase.bits - 1)
    for start in range(0, rows, NUMPY_BLOCK_ROWS):
        stop = min(rows, start + NUMPY_BLOCK_ROWS)
        block = words[start * phase.words : stop * phase.words].reshape(stop - start, phase.words)
        fields = ((block[:, :, None] >> shifts) & mask).reshape(stop - start, -1).astype(np.int64)
        accepted = fields < phase.size
        rank = np.cumsum(accepted, axis=1)
        take = accepted & (rank <= phase.picks)
        out[start:stop] += np.where(take, table[fields], 0).sum(axis=1)
        short[start:stop] |= rank[:, -1] < phase.picks


_KERNEL = None


def _numba_kernel():
    """Compile (once, cached on disk) the parallel decoder; None without numba."""
    global _KERNEL
    if _KERNEL is None:
        try:
            from negotiation.analysis._kernel import decode_words
        except ImportError:
            _KERNEL = False
        else:
            _KERNEL = decode_words
    return _KERNEL or None


def backend() -> str:
    """``"numba"`` when the compiled decoder is available, else ``"numpy"``."""
    return "numba" if _numba_kernel() is not None else "numpy"


def _decode(child: np.random.Generator, table: np.ndarray, phase: Phase, out: np.ndarray, short: np.ndarray,
            use_numba: bool) -> None:
    """Draw ``phase.words`` words per row from ``child`` and decode them into ``out``."""
    if phase.picks == 0:
        return
    words = child.integers(0, np.iinfo(np.uint64).max, size=len(out) * phase.words, dtype=np.uint64, endpoint=True)
    kernel = _numba_kernel() if use_numba else None
    if kernel is None:
        decode_numpy(words, table, phase, out, short)
    else:
        kernel(words, table, phase.picks, phase.bits, phase.size, phase.words, out, short)


def _resample_chunk(
    values: np.ndarray, rows: int, child: np.random.Generator, use_numba: bool
) -> np.ndarray:
    num_clusters = values.size
    multi, single, t = plan_phases(num_clusters)
    out = np.zeros(rows, dtype=values.dtype)
    short = np.zeros(rows, dtype=np.bool_)
    # Tuple-phase words for every row first, then single-phase words: a fixed layout.
    for phase, size in ((multi, t), (single, 1)):
        _decode(child, tuple_table(values, size, phase.bits), phase, out, short, use_numba)
    for row in np.flatnonzero(short):
        out[row] = values[child.integers(0, num_clusters, size=num_clusters)].sum()
    return out


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, min(CHUNKS, os.cpu_count() or 1)))
    return _POOL


def resample_totals(
    values: np.ndarray, resamples: int, rng: np.random.Generator, *, use_numba: bool = True
) -> np.ndarray:
    """Sums of ``len(values)`` uniform picks of ``values``, one per resample.

    Args:
      values: ``(num_clusters,)`` float64 (or complex128: two sums at once).
      resamples: number of rows ``B``.
      rng: the analysis Generator; it is advanced by ``CHUNKS`` draws (child seeds).
      use_numba: False forces the numpy reference decoder.

    Returns:
      ``(B,)`` totals, same dtype as ``values``.
    """
    values = np.ascontiguousarray(values)
    seeds = rng.integers(0, 2**63, size=CHUNKS)
    bounds = np.linspace(0, resamples, CHUNKS + 1).astype(int)
    # SFC64 children: a numpy bit generator that fills raw words about 1.5x faster than PCG64.
    children = [np.random.Generator(np.random.SFC64(int(seed))) for seed in seeds]
    jobs = [
        _pool().submit(_resample_chunk, values, int(stop - start), child, use_numba)
        for start, stop, child in zip(bounds[:-1], bounds[1:], children)
    ]
    return np.concatenate([job.result() for job in jobs])
