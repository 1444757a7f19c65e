"""A static KV cache whose rows ("slots") each have their own length.

transformers' ``StaticCache`` writes every row at one shared cache position, so all rows of a
batch must be at the same length. A continuous batch holds sequences of different lengths that
grow at different times: ``slot_cache`` builds one that writes each row's new keys and values at that row's own
positions, read from a tensor (``SlotIndex.positions``) that the caller fills before a forward
pass, and returns the whole static buffers, so attention reads every position and an explicit
boolean mask (``[B, 1, T, C + 1]``) says which are the row's. Position ``C`` (the last) is a
trash slot: writes of padding tokens and of rows that do not advance land there and are never
attended to, so a fixed-shape step can run every row whatever its state.

The model calls ``update(keys, values, layer_idx)`` and nothing else of the cache when it is
given ``position_ids`` and a 4D mask (Llama and Gemma3 in transformers 5.x).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["SlotIndex", "slot_cache"]


@dataclass
class SlotIndex:
    """Where the next forward pass writes: filled in place by the caller, read by every layer."""

    rows: torch.Tensor | None
    """``[R]`` int64 cache rows of the forward's batch rows, or None: batch row ``b`` is cache row ``b``."""
    positions: torch.Tensor
    """``[R, T]`` int64 cache position of every input token (``C``, the trash slot, for padding)."""
    window: int | None = None
    """Positions attention reads, from 0 (None: all ``C + 1``): the caller's bound on every row's
    length, so a step costs what the longest sequence holds, not what the cache could hold."""


def _layer_class() -> type:
    from transformers.cache_utils import CacheLayerMixin

    class SlotLayer(CacheLayerMixin):
        """One layer's ``[B, H, C + 1, D]`` keys and values, written at per-row positions."""

        is_compileable = True
        is_sliding = False

        def __init__(self, index: SlotIndex, keys: torch.Tensor, values: torch.Tensor):
            super().__init__()
            self.index, self.keys, self.values = index, keys, values
            self.is_initialized = True

        def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
            raise RuntimeError("SlotLayer buffers are allocated up front")

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
                   **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
            """Scatter ``[R, H, T, D]`` new states at each row's positions; the rows' full buffers."""
            rows, pos = self.index.rows, self.index.positions
            batch = torch.arange(pos.shape[0], device=pos.device) if rows is None else rows
            # [R, T] row and position indices around a sliced head dim index a [R, T, H, D] block
            self.keys[batch[:, None], :, pos] = key_states.transpose(1, 2)
            self.values[batch[:, None], :, pos] = value_states.transpose(1, 2)
            window = self.index.window
            # narrow, not a slice: the window is exactly its length (a slice's clamp to the buffer
            # leaves a symbolic min() that torch.compile cannot always reshape)
            keys = self.keys if window is None else self.keys.narrow(2, 0, window)
            values = self.values if window is None else self.values.narrow(2, 0, window)
            if rows is None:
                return keys, values
            return keys[rows], values[rows]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.index.window or self.keys.shape[2], 0

        def get_seq_length(self) -> int:
            return 0  # lengths are per row; the caller always passes position_ids

        def get_max_length(self) -> int:
            return self.keys.shape[2] - 1

    return SlotLayer


def slot_cache(config: Any, *, rows: int, positions: int, dtype: torch.dtype, device: torch.device) -> Any:
    """A transformers ``Cache`` of ``rows`` slots × ``positions`` (+1 trash) for ``config``'s model.

    Its ``index`` attribute is the ``SlotIndex`` every layer reads. Only full-attention models:
    a sliding-window layer would need its own mask, which the slot engine does not build.
    """
    from transformers.cache_utils import Cache

    text = config.get_text_config(decoder=True)
    if any(t != "full_attention" for t in (getattr(text, "layer_types", None) or [])):
        raise ValueError(f"slot_cache: only full-attention layers are supported, got {text.layer_types}")
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    shape = (rows, text.num_key_value_heads, positions + 1, head_dim)
    index = SlotIndex(None, torch.zeros((rows, 1), dtype=torch.long, device=device))
    layer = _layer_class()
    layers = [layer(index, torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))
              for _ in range(text.num_hidden_layers)]
    cache = Cache(layers=layers)
    cache.index = index  # type: ignore[attr-defined]
    return cache
