"""The warm start's pieces against plain references."""

from __future__ import annotations

import math

import pytest
import torch

from negotiation.lm._sft import lr_at_step, masked_lm_loss


def test_schedule_warms_up_then_falls_to_a_tenth():
    lrs = [lr_at_step(s, 20, 1.0, 4) for s in range(20)]
    assert lrs[:4] == [0.25, 0.5, 0.75, 1.0]
    assert lrs[4] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[4:], lrs[5:]))


def test_masked_loss_is_the_mean_over_target_tokens_only():
    torch.manual_seed(0)
    logits, ids = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    mask = torch.tensor([[0, 0, 1, 1, 0], [0, 1, 1, 1, 1]], dtype=torch.float32)
    total, count = masked_lm_loss(logits, ids, mask)
    expected = [-torch.log_softmax(logits[b, t - 1], -1)[ids[b, t]] for b in range(2) for t in range(1, 5) if mask[b, t]]
    assert count == 6 and math.isclose(float(total), float(sum(expected)), rel_tol=1e-5)


def test_target_loss_equals_the_loss_of_the_full_logits(tiny_lm):
    from transformers import AutoModelForCausalLM

    from negotiation.lm._sft import target_loss

    model = AutoModelForCausalLM.from_pretrained(tiny_lm).eval()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 200, (3, 12), generator=gen)
    attention = torch.ones_like(ids)
    attention[2, 9:] = 0  # a right-padded row
    mask = torch.zeros(3, 12)
    mask[0, 3:6], mask[1, 8:12], mask[2, 5:9] = 1, 1, 1
    with torch.no_grad():
        full = masked_lm_loss(model(input_ids=ids, attention_mask=attention).logits, ids, mask)
        kept = target_loss(model, ids, attention, mask)
    assert float(kept[1]) == float(full[1]) == 11
    assert math.isclose(float(kept[0]), float(full[0]), rel_tol=1e-5)
