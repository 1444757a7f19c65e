"""The token-level loss against plain references: full-vocabulary entropy, micro-batching."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.training.lm import (
    TokenBatch, generated_logits, generated_positions, grpo_token_step, micro_batches, token_logprobs_entropy,
)
from tests.training.lm.bigram_lm import BigramLm
from tests.training.lm.tiny_lm import write_tiny_checkpoint


@given(st.lists(st.integers(1, 50), min_size=1, max_size=30), st.integers(1, 200))
@settings(max_examples=60, deadline=None)
def test_micro_batches_cover_each_episode_once_within_budget(lengths, budget):
    groups = micro_batches(lengths, budget)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        assert len(g) == 1 or len(g) * max(lengths[i] for i in g) <= budget


def test_logprobs_and_entropy_match_torch_distributions():
    torch.manual_seed(0)
    logits, targets = torch.randn(2, 5, 11), torch.randint(0, 11, (2, 5))
    logp, entropy = token_logprobs_entropy(logits, targets)
    dist = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(logp, dist.log_prob(targets))
    torch.testing.assert_close(entropy, dist.entropy())


_Lm = BigramLm


def _grads(budget: int) -> list[torch.Tensor]:
    torch.manual_seed(1)
    model, reference = _Lm(), _Lm()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    batch = TokenBatch(ids=[[1, 2, 3, 4, 5], [6, 7, 8], [9, 10, 11, 12]],
                       gen_mask=[[0, 0, 1, 1, 0], [0, 1, 1], [0, 0, 1, 1]], advantages=[1.0, -0.5, 2.0])
    metrics = grpo_token_step(model, reference, opt, batch, lr=0.0, clip_low=0.2, clip_high=0.2, kl_coef=0.04,
                              max_grad_norm=1e9, token_budget=budget, pad_id=0)
    assert metrics["train/trained_tokens"] == 6
    return [p.grad.clone() for p in model.parameters()], metrics


def test_micro_batched_gradient_equals_the_whole_batch_token_mean():
    whole, m_whole = _grads(budget=10_000)
    split, m_split = _grads(budget=4)
    for a, b in zip(whole, split):
        torch.testing.assert_close(a, b)
    assert m_whole["train/kl_penalty"] == pytest.approx(m_split["train/kl_penalty"])
    assert m_whole["train/entropy"] == pytest.approx(m_split["train/entropy"])


def test_gradient_is_the_advantage_weighted_token_mean():
    """At ratio 1 and zero KL weight the loss gradient is -mean_t A_t ∇log π(t)."""
    torch.manual_seed(1)
    model, reference = _Lm(), _Lm()
    batch = TokenBatch(ids=[[1, 2, 3], [4, 5]], gen_mask=[[0, 1, 1], [0, 1]], advantages=[2.0, -1.0])
    grpo_token_step(model, reference, torch.optim.SGD(model.parameters(), lr=0.0), batch, lr=0.0, clip_low=0.2,
                    clip_high=0.2, kl_coef=0.0, max_grad_norm=1e9, token_budget=100, pad_id=0)
    expect = torch.zeros_like(model.table.weight)
    table = model.table.weight.detach().clone().requires_grad_(True)
    terms = [(-2.0, 1, 2), (-2.0, 2, 3), (1.0, 4, 5)]  # (-A, input, target)
    loss = sum(a * torch.log_softmax(table[i], -1)[t] for a, i, t in terms) / 3
    loss.backward()
    expect = table.grad
    torch.testing.assert_close(model.table.weight.grad, expect)


def _sampler_logprobs(model: _Lm, batch: TokenBatch, shift: int = 0) -> list[list[float]]:
    """log π(ids[t] | ids[t-1]) of the bigram model in float64, at position t (0 at t = 0);
    ``shift`` moves each row's values ``shift`` positions right (a misaligned sampler)."""
    table = torch.log_softmax(model.table.weight.detach().double(), -1)
    rows = []
    for ids in batch.ids:
        row = [0.0] + [float(table[ids[t - 1], ids[t]]) for t in range(1, len(ids))]
        rows.append(([0.0] * shift + row)[: len(row)])
    return rows


@pytest.mark.parametrize("budget", [4, 10_000])
def test_sampler_logprob_gap_is_zero_when_aligned_and_large_when_shifted(budget):
    torch.manual_seed(3)
    model, reference = _Lm(), _Lm()
    with torch.no_grad():
        model.table.weight.mul_(4.0)  # peaked rows: a wrong position's log-prob differs clearly
    batch = TokenBatch(ids=[[1, 2, 3, 4, 5], [6, 7, 8], [9, 10, 11, 12]],
                       gen_mask=[[0, 0, 1, 1, 0], [0, 1, 1], [0, 0, 1, 1]], advantages=[1.0, -0.5, 2.0])
    kw = dict(lr=0.0, clip_low=0.2, clip_high=0.2, kl_coef=0.04, max_grad_norm=1e9, token_budget=budget, pad_id=0)
    plain = grpo_token_step(model, reference, torch.optim.SGD(model.parameters(), lr=0.0), batch, **kw)
    assert "train/logprob_gap_mean" not in plain  # no sampler log-probs: no gap columns
    aligned = TokenBatch(batch.ids, batch.gen_mask, batch.advantages, _sampler_logprobs(model, batch))
    m = grpo_token_step(model, reference, torch.optim.SGD(model.parameters(), lr=0.0), aligned, **kw)
    assert m["train/logprob_gap_max"] < 1e-5 and m["train/logprob_gap_mean"] <= m["train/logprob_gap_max"]
    shifted = TokenBatch(batch.ids, batch.gen_mask, batch.advantages, _sampler_logprobs(model, batch, shift=1))
    m = grpo_token_step(model, reference, torch.optim.SGD(model.parameters(), lr=0.0), shifted, **kw)
    assert m["train/logprob_gap_mean"] > 0.5 and m["train/logprob_gap_max"] > 1.0


@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=9), min_size=1, max_size=5))
@settings(max_examples=60, deadline=None)
def test_generated_positions_pick_the_inputs_that_predict_a_generated_token(masks):
    width = max(len(m) for m in masks) - 1
    flat = generated_positions(masks, width)
    expect = [(k, t) for k, m in enumerate(masks) for t in range(width) if t + 1 < len(m) and m[t + 1]]
    assert flat == [k * width + t for k, t in expect]


def test_generated_logits_equal_the_models_own_forward_there(tmp_path):
    """A real (tiny Llama) checkpoint in float64: the head on the selected hidden states gives the
    full forward's logits at those positions, padding and attention mask included."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(write_tiny_checkpoint(tmp_path), dtype=torch.float64)
    ids = torch.tensor([[5, 9, 12, 7, 3, 8], [4, 6, 11, 2, 0, 0]])
    attention = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    masks = [[0, 0, 1, 1, 0, 1], [0, 1, 1, 0]]
    index = torch.tensor(generated_positions(masks, ids.shape[1] - 1))
    got = generated_logits(model, ids[:, :-1], attention[:, :-1], index)
    full = model(input_ids=ids[:, :-1], attention_mask=attention[:, :-1], use_cache=False).logits
    torch.testing.assert_close(got, full.reshape(-1, full.shape[-1])[index], rtol=1e-12, atol=1e-12)
    assert got.shape[0] == 3 + 2
