"""The slot engine's grouped attention against transformers' own SDPA path (which copies keys and
values per query head): same outputs, for decode and prefill shapes, grouped and not."""

from __future__ import annotations

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from negotiation.lm._slot_attention import SLOT_ATTENTION, _grouped_sdpa, slot_attention


@pytest.mark.parametrize("heads,kv_heads,length", [(4, 2, 1), (4, 2, 5), (2, 2, 3), (8, 1, 1)])
def test_grouped_attention_equals_the_sdpa_path_with_copied_heads(heads, kv_heads, length):
    g = torch.Generator().manual_seed(heads * 10 + length)
    batch, seen, dim = 3, 11, 8
    query = torch.randn(batch, heads, length, dim, generator=g, dtype=torch.float64)
    key = torch.randn(batch, kv_heads, seen, dim, generator=g, dtype=torch.float64)
    value = torch.randn(batch, kv_heads, seen, dim, generator=g, dtype=torch.float64)
    mask = torch.rand(batch, 1, length, seen, generator=g) < 0.7
    mask[..., 0] = True  # every query sees something

    class _Module:
        num_key_value_groups = heads // kv_heads
        is_causal = False
        training = False

    ours, _ = _grouped_sdpa(None, query, key, value, mask, scaling=0.3)
    theirs, _ = sdpa_attention_forward(_Module(), query, key, value, mask, scaling=0.3)
    assert ours.shape == theirs.shape == (batch, length, heads, dim)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_the_model_gets_its_own_attention_back():
    class _Config:
        _attn_implementation = "sdpa"

    class _Model:
        config = _Config()

    model = _Model()
    with slot_attention(model):
        assert model.config._attn_implementation == SLOT_ATTENTION
    assert model.config._attn_implementation == "sdpa"


def test_a_missing_mask_is_refused():
    q = torch.zeros(1, 2, 1, 4)
    with pytest.raises(ValueError, match="explicit mask"):
        _grouped_sdpa(None, q, q[:, :1], q[:, :1], None)


@pytest.mark.parametrize("groups", [1, 2])
def test_matmul_attention_is_sdpa_under_a_mask(groups):
    """The decode step's two batched matmuls around a masked softmax (CUDA's decode path) give
    SDPA's result in float64, for grouped queries folded onto their key-value head too."""
    from negotiation.lm._slot_attention import matmul_attention

    g = torch.Generator().manual_seed(3)
    batch, kv_heads, window, dim = 3, 2, 9, 8
    query = torch.randn(batch, kv_heads, groups, dim, generator=g, dtype=torch.float64)
    key, value = (torch.randn(batch, kv_heads, window, dim, generator=g, dtype=torch.float64) for _ in range(2))
    lengths = torch.tensor([0, 4, 8])  # each row sees its cache up to its own length (position 0 at least)
    mask = (torch.arange(window)[None, :] <= lengths[:, None])[:, None, None, :].expand(-1, 1, groups, -1)
    expected = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=0.3)
    assert torch.allclose(matmul_attention(query, key, value, mask, 0.3), expected, atol=1e-12)
    default = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    assert torch.allclose(matmul_attention(query, key, value, mask), default, atol=1e-12)
