"""Seeded token sampling whose draws do not depend on the batch a request shares.

Each row of a decode step is sampled by the Gumbel-max trick: the next token is
``argmax_i (logit_i / T + G_i)`` over the tokens that survive top-k and top-p, where
``G_i = -log(-log u_i)`` and ``u_i`` is a counter-based hash of ``(seed, step, token id)``. That
is an exact draw from the truncated, tempered softmax, and its randomness is a pure function of
the request's seed, the index of the generated token and the token id: no generator state is
shared between rows, so a request gets the same tokens alone, in any batch, in any order, on
CPU or CUDA (the hash is integer arithmetic, bit-identical on both), as long as the logits agree.
Batched and single-row forward passes agree only to floating-point rounding, which can flip a
draw only when two candidates' perturbed scores tie to within that rounding.

Order of the transforms is the one transformers and vLLM use: temperature, then top-k, then
top-p over the renormalised survivors (the highest-probability token always survives).
Temperature 0 means greedy decoding (argmax of the raw logits).
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF
_M1, _M2 = 0x85EBCA6B, 0xC2B2AE35  # murmur3's 32-bit finaliser constants
_GOLDEN = 0x9E3779B9


def _mul32(a: torch.Tensor, b: int) -> torch.Tensor:
    """``(a * b) mod 2**32`` for ``a`` in [0, 2**32) held in int64, without int64 overflow."""
    lo, hi = b & 0xFFFF, b >> 16
    return (a * lo + (((a * hi) & 0xFFFF) << 16)) & _MASK32


def _fmix32(h: torch.Tensor) -> torch.Tensor:
    """murmur3's finaliser: a bijection on 32-bit words with full avalanche."""
    h = h ^ (h >> 16)
    h = _mul32(h, _M1)
    h = h ^ (h >> 13)
    h = _mul32(h, _M2)
    return h ^ (h >> 16)


def row_keys(seeds: torch.Tensor, step: int | torch.Tensor) -> torch.Tensor:
    """One 32-bit key per row from its 64-bit seed and the generated-token index.

    Args:
        seeds: ``[B]`` int64, each in [0, 2**63).
        step: index of the token being generated (0 for the first new token): one int for every
            row, or a ``[B]`` int64 tensor of per-row indices (rows of a continuous batch are at
            different tokens of their turns; a tensor keeps the step free of host syncs).

    Returns:
        ``[B]`` int64 keys in [0, 2**32).
    """
    lo, hi = seeds & _MASK32, (seeds >> 32) & _MASK32
    h = _fmix32(lo ^ _GOLDEN)
    h = _fmix32(h ^ hi)
    step_bits = step & _MASK32 if isinstance(step, torch.Tensor) else int(step) & _MASK32
    return _fmix32(h ^ step_bits)


def uniform_noise(keys: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """``u`` in (0, 1), float32, for every (row key, token id) pair.

    Args:
        keys: ``[B]`` int64 from ``row_keys``.
        token_ids: ``[B, K]`` int64 candidate token ids.

    Returns:
        ``[B, K]`` float32; 24 random bits each, centred in their bin so never 0 or 1.
    """
    h = _fmix32(keys[:, None] ^ token_ids)
    h = _fmix32((h + _GOLDEN) & _MASK32)
    return ((h >> 8).to(torch.float32) + 0.5) * (1.0 / (1 << 24))


def gumbel_noise(seeds: torch.Tensor, step: int | torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise ``[B, K]`` keyed by ``(seed, step, token id)``."""
    u = uniform_noise(row_keys(seeds, step), token_ids)
    return -torch.log(-torch.log(u))


def truncation_mask(scores: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Which sorted candidates survive top-k and then top-p.

    Args:
        scores: ``[B, K]`` tempered logits of the candidates, sorted descending per row.
        top_k: ``[B]`` int64, tokens kept per row (``K`` or more: no top-k).
        top_p: ``[B]`` float32 nucleus mass (``> 1``: no top-p).

    Returns:
        ``[B, K]`` bool; the first column is always True.
    """
    position = torch.arange(scores.shape[1], device=scores.device)
    keep = position[None, :] < top_k[:, None]
    probs = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    mass_before = torch.cumsum(probs, dim=-1) - probs
    keep &= mass_before < top_p[:, None]
    keep[:, 0] = True
    return keep


def sample_tokens(logits: torch.Tensor, *, seeds: torch.Tensor, step: int | torch.Tensor, temperature: torch.Tensor,
                  top_k: torch.Tensor, top_p: torch.Tensor, width: int | None = None) -> torch.Tensor:
    """The next token of every row.

    Args:
        logits: ``[B, V]`` float32 next-token logits.
        seeds: ``[B]`` int64 per-request seeds.
        step: index of the token being generated: an int for every row, or ``[B]`` int64 per row.
        temperature: ``[B]`` float32; 0 = greedy.
        top_k: ``[B]`` int64; 0 = no top-k.
        top_p: ``[B]`` float32 in (0, 1]; 1 = no top-p.
        width: candidates ranked per row, at least every row's top-k (``None``: the largest
            top-k, read with a host sync). A fixed width keeps the step capturable as a CUDA graph;
            the draw does not depend on it as long as it covers every row's top-k.

    Returns:
        ``[B]`` int64 token ids.
    """
    vocab = logits.shape[1]
    k = torch.where(top_k > 0, top_k.clamp(max=vocab), torch.full_like(top_k, vocab))
    width = int(k.max()) if width is None else min(int(width), vocab)
    values, ids = torch.topk(logits, width, dim=-1, sorted=True)
    greedy = temperature <= 0
    scores = values / torch.where(greedy, torch.ones_like(temperature), temperature)[:, None]
    nucleus = torch.where(top_p >= 1, torch.full_like(top_p, 2.0), top_p)
    keep = truncation_mask(scores, k, nucleus)
    perturbed = (scores + gumbel_noise(seeds, step, ids)).masked_fill(~keep, float("-inf"))
    choice = torch.where(greedy, torch.zeros_like(k), perturbed.argmax(dim=-1))
    return ids.gather(1, choice[:, None]).squeeze(1)
