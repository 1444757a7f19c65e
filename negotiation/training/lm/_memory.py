"""Gradient checkpointing where memory needs it, decided by one probe on the device.

Checkpointing recomputes every layer's activations in the backward pass: update time for
memory. The GPU sizes of the lm ladder fit one micro-batch without it (H100,
131,072 tokens a micro-batch: lm_m peaked at 26 GB, lm_l at 55 GB), the paper's sizes on the
``token`` backend do not. ``needs_checkpointing`` runs the update's largest micro-batch once,
forward and backward, on pad tokens after the policy, the reference and the rollout engine are
loaded, and says whether it fit with room left for AdamW's moments (allocated at the first step).
"""

from __future__ import annotations

import torch

from negotiation.training.lm._loss import generated_logits

__all__ = ["checkpointing_needed", "enable_checkpointing", "needs_checkpointing"]

HEADROOM = 0.9
"""Share of the device's memory the update may use at its peak (the rest: fragmentation, the
allocator's cache)."""
MOMENT_BYTES = 8
"""AdamW's float32 first and second moments per trainable parameter (``MasterAdamW``)."""


def checkpointing_needed(peak_bytes: int | None, moment_bytes: int, total_bytes: int,
                         headroom: float = HEADROOM) -> bool:
    """Whether a probed peak (None: the probe ran out of memory) plus the moments yet to be
    allocated exceeds ``headroom`` of the device."""
    return peak_bytes is None or peak_bytes + moment_bytes > headroom * total_bytes


def enable_checkpointing(model: torch.nn.Module) -> None:
    """Turn on transformers' non-reentrant gradient checkpointing (no KV cache while training)."""
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False


def _probe_peak(model: torch.nn.Module, reference: torch.nn.Module, rows: int, width: int,
                pad_id: int) -> int | None:
    """Peak allocated bytes of one ``[rows, width]`` micro-batch: the reference's forward, the
    policy's forward through the head at every position (the worst case) and its backward; None
    when it ran out of memory. Gradients are dropped afterwards."""
    device = next(model.parameters()).device
    ids = torch.full((rows, width), pad_id, dtype=torch.long, device=device)
    attention, index = torch.ones_like(ids), torch.arange(rows * width, device=device)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    try:
        with torch.no_grad():
            generated_logits(reference, ids, attention, index)
        torch.log_softmax(generated_logits(model, ids, attention, index).float(), dim=-1).mean().backward()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device)
    except torch.OutOfMemoryError:
        return None
    finally:
        model.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)  # timing.csv's peak is the training's, not the probe's


def needs_checkpointing(model: torch.nn.Module, reference: torch.nn.Module, *, micro_batch_tokens: int,
                        context_tokens: int, pad_id: int) -> bool:
    """True when the update's largest micro-batch (rows of ``context_tokens`` within
    ``micro_batch_tokens``) does not fit ``model``'s CUDA device without checkpointing; False
    off CUDA (host memory is not probed)."""
    device = next(model.parameters()).device
    if device.type != "cuda":
        return False
    width = min(context_tokens, micro_batch_tokens)
    was_training = model.training
    model.train()
    try:
        peak = _probe_peak(model, reference, max(1, micro_batch_tokens // width), width, pad_id)
    finally:
        model.train(was_training)
    moments = MOMENT_BYTES * sum(p.numel() for p in model.parameters() if p.requires_grad)
    return checkpointing_needed(peak, moments, torch.cuda.get_device_properties(device).total_memory)
