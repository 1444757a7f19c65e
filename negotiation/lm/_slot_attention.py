"""The slot engine's attention: grouped queries folded onto their key-value head, no copies.

transformers' SDPA path expands a grouped-query model's keys and values to one copy per query
head (``repeat_kv``) whenever a mask is given, and the slot engine always gives one: every decode
step then copied the whole attended window of the cache, which cost more than the attention
itself. Here the ``G`` query heads that share a key-value head are laid out as ``G`` query rows
of that head (``[B, H_kv, G * T, D]``) with the mask repeated to match, so one SDPA call reads
each cached key and value once. On CUDA the call is pinned to the memory-efficient kernel: the
cuDNN kernel, which PyTorch otherwise picks for masked bf16 attention, builds an execution plan
per new shape, and every prefill of the continuous batch has a new shape.

``slot_attention(model)`` switches a model to this function while the slot engine runs it (the
layers read ``config._attn_implementation`` at each call; a captured CUDA graph keeps what it
recorded) and restores the model's own implementation after, so training forwards are untouched.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

__all__ = ["SLOT_ATTENTION", "slot_attention"]

SLOT_ATTENTION = "negotiation_slot_sdpa"
"""Name under which the function is registered with transformers' ``AttentionInterface``."""

_CUDA_BACKENDS = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def _grouped_sdpa(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                  softcap: float | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
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
    if query.device.type == "cuda":
        with sdpa_kernel(_CUDA_BACKENDS):
            out = torch.nn.functional.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    else:
        out = torch.nn.functional.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(batch, heads, length, dim).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(SLOT_ATTENTION, _grouped_sdpa)


@contextmanager
def slot_attention(model: Any) -> Iterator[None]:
    """Run ``model``'s attention layers through the grouped SDPA call inside the block."""
    _register()
    config = model.config
    own = config._attn_implementation
    config._attn_implementation = SLOT_ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = own
