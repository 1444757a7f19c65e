"""The slot engine's attention: grouped queries folded onto their key-value head, no copies.

transformers' SDPA path expands a grouped-query model's keys and values to one copy per query
head (``repeat_kv``) whenever a mask is given, and the slot engine always gives one: every decode
step then copied the whole attended window of the cache, which cost more than the attention
itself. Here the ``G`` query heads that share a key-value head are laid out as ``G`` query rows
of that head (``[B, H_kv, G * T, D]``) with the mask repeated to match, so one SDPA call reads
each cached key and value once. On CUDA the call is pinned to the memory-efficient kernel: the
cuDNN kernel, which PyTorch otherwise picks for masked bf16 attention, builds an execution plan
per new shape, and every prefill of the continuous batch has a new shape.

A decode step (one query per row) on CUDA does not go through that kernel: it runs a whole
CTA per (row, key-value head) and walks the window's keys in sequence, so its time grew with the
window and not with the rows (H100, lm_m, 128 slots: 72 % of the step, 0.70 ms at a 1,536-token
window, the same at 32 slots). Two batched matmuls around a masked softmax
(``matmul_attention``) read the same keys and values with the whole GPU (``matmul_decode``).

``slot_attention(model)`` switches a model to this function while the slot engine runs it (the
layers read ``config._attn_implementation`` at each call; a captured CUDA graph keeps what it
recorded) and restores the model's own implementation after, so training forwards are untouched.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

__all__ = ["SLOT_ATTENTION", "matmul_attention", "sdpa_without_cudnn", "slot_attention"]

SLOT_ATTENTION = "negotiation_slot_sdpa"
"""Name under which the function is registered with transformers' ``AttentionInterface``."""
_FUSED_DECODE = "negotiation_slot_sdpa_fused_decode"
"""The same with CUDA decode steps through the fused kernel too (``matmul_decode=False``)."""

_CUDA_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
"""Every SDPA kernel but cuDNN's (flash takes no mask, so a masked call gets the memory-efficient one)."""


def sdpa_without_cudnn() -> Any:
    """A context in which SDPA never picks the cuDNN kernel. cuDNN builds an execution plan per
    new shape on the host, and a workload of ever-new shapes pays it every call: the slot engine's
    prefills, and the token update, whose micro-batches are as long as that step's episodes."""
    return sdpa_kernel(_CUDA_BACKENDS)


def matmul_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor,
                     scale: float | None = None) -> torch.Tensor:
    """``softmax(q kᵀ · scale, masked) v`` as two batched matmuls: ``[B, H, Q, D]`` queries,
    ``[B, H, S, D]`` keys and values, ``[B, 1, Q, S]`` boolean mask (every query sees a key);
    ``[B, H, Q, D]``. The softmax runs in float32 (float64 stays float64)."""
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    scores = torch.matmul(query, key.transpose(-1, -2)) * scale
    exact = torch.float64 if scores.dtype == torch.float64 else torch.float32
    scores = scores.to(exact).masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1).to(value.dtype), value)


def _grouped_sdpa(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                  softcap: float | None = None, matmul_decode: bool = True, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """``[B, H, T, D]`` queries against ``[B, H_kv, S, D]`` keys/values under a ``[B, 1, T, S]``
    boolean mask; returns ``[B, T, H, D]`` as transformers' attention functions do."""
    if softcap is not None:
        raise ValueError("slot attention: attention logit soft-capping is not supported")
    if attention_mask is None:
        raise ValueError("slot attention: needs the slot engine's explicit mask")
    batch, heads, length, dim = query.shape
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    # query head h = k * groups + j serves key-value head k (repeat_kv's order)
    folded = query.reshape(batch, kv_heads, groups * length, dim)
    mask = attention_mask
    if groups > 1:
        # explicit sizes, no -1: inductor cannot split a symbolic window out of an inferred size
        mask = mask[:, :, None].expand(-1, -1, groups, -1, -1).reshape(mask.shape[0], 1, groups * length,
                                                                        mask.shape[-1])
    if query.device.type == "cuda" and length == 1 and matmul_decode:
        out = matmul_attention(folded, key, value, mask, scaling)
    elif query.device.type == "cuda":
        with sdpa_without_cudnn():
            out = torch.nn.functional.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    else:
        out = torch.nn.functional.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(batch, heads, length, dim).transpose(1, 2).contiguous(), None


def _fused_decode(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
    return _grouped_sdpa(*args, matmul_decode=False, **kwargs)


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(SLOT_ATTENTION, _grouped_sdpa)
    AttentionInterface.register(_FUSED_DECODE, _fused_decode)


@contextmanager
def slot_attention(model: Any, matmul_decode: bool = True) -> Iterator[None]:
    """Run ``model``'s attention layers through the grouped SDPA call inside the block; CUDA decode
    steps through ``matmul_attention`` unless ``matmul_decode`` is False."""
    _register()
    config = model.config
    own = config._attn_implementation
    config._attn_implementation = SLOT_ATTENTION if matmul_decode else _FUSED_DECODE
    try:
        yield
    finally:
        config._attn_implementation = own
