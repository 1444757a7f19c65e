"""Seeded sampling: exact truncated-softmax draws, keyed noise, top-k/top-p against a plain reference."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.lm import gumbel_noise, sample_tokens, truncation_mask


def reference_keep(scores: list[float], top_k: int, top_p: float) -> list[bool]:
    """Sorted-descending scores: keep the first top_k, then while the mass before a token is below top_p."""
    kept = scores[:top_k]
    z = sum(math.exp(s - kept[0]) for s in kept)
    keep, before = [], 0.0
    for i, s in enumerate(scores):
        ok = i < top_k and (i == 0 or before < top_p)
        keep.append(ok)
        if i < top_k:
            before += math.exp(s - kept[0]) / z
    return keep


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-8, 8), min_size=1, max_size=12), st.integers(1, 14), st.floats(0.05, 1.0))
def test_truncation_matches_the_reference(values, top_k, top_p):
    scores = sorted(values, reverse=True)
    got = truncation_mask(torch.tensor([scores], dtype=torch.float64), torch.tensor([top_k]),
                          torch.tensor([top_p], dtype=torch.float64))[0].tolist()
    expected = reference_keep(scores, top_k, top_p)
    # a boundary that differs only by rounding of the cumulative mass is not a disagreement
    mass = [sum(math.exp(s) for s in scores[:i]) / sum(math.exp(s) for s in scores[:top_k]) for i in range(len(scores))]
    assert all(g == e or abs(m - top_p) < 1e-9 for g, e, m in zip(got, expected, mass))


def test_draws_follow_the_truncated_tempered_softmax():
    logits = torch.tensor([2.0, 1.5, 1.0, 0.2, -0.5, -1.0, -3.0, -4.0])
    n, temperature, top_k, top_p = 40_000, 0.8, 6, 0.9
    rows = logits.expand(n, -1)
    tokens = sample_tokens(rows, seeds=torch.arange(n), step=3, temperature=torch.full((n,), temperature),
                           top_k=torch.full((n,), top_k), top_p=torch.full((n,), top_p))
    probs = torch.softmax(logits[:top_k] / temperature, 0)
    keep = (torch.cumsum(probs, 0) - probs) < top_p
    expected = torch.zeros(len(logits))
    expected[:top_k][keep] = probs[keep] / probs[keep].sum()
    counts = torch.bincount(tokens, minlength=len(logits)).double()
    assert counts[expected == 0].sum() == 0
    chi2 = float((((counts - n * expected) ** 2) / (n * expected)).nansum())
    assert chi2 < 25.0  # 3 degrees of freedom here: p < 1e-4 under the right distribution


def test_noise_is_keyed_by_seed_step_and_token_not_by_position():
    seeds = torch.tensor([5, 5, 6])
    ids = torch.tensor([[1, 2, 3], [3, 1, 2], [1, 2, 3]])
    noise = gumbel_noise(seeds, 0, ids)
    assert torch.equal(noise[0], noise[1][[1, 2, 0]])  # same (seed, step, token): same noise
    assert not torch.equal(noise[0], noise[2])  # another seed
    assert not torch.equal(noise[0], gumbel_noise(seeds, 1, ids)[0])  # another step
    u = torch.exp(-torch.exp(-gumbel_noise(torch.arange(2000), 0, torch.arange(64).expand(2000, -1))))
    assert abs(float(u.mean()) - 0.5) < 0.005 and float(u.min()) > 0 and float(u.max()) < 1


def test_greedy_rows_take_the_argmax_and_large_seeds_work():
    logits = torch.randn(4, 30, generator=torch.Generator().manual_seed(1))
    tokens = sample_tokens(logits, seeds=torch.tensor([0, 2**62, 7, 2**63 - 1]), step=0,
                           temperature=torch.zeros(4), top_k=torch.zeros(4, dtype=torch.long), top_p=torch.ones(4))
    assert torch.equal(tokens, logits.argmax(-1))


def test_per_row_steps_and_a_fixed_width_draw_what_one_row_at_a_time_draws():
    """The slot decoder's form (a step tensor, top-k at a fixed width, no host sync) changes no draw."""
    torch.manual_seed(3)
    logits = torch.randn(6, 50)
    seeds = torch.arange(6, dtype=torch.long) * 977 + 5
    steps = torch.tensor([0, 3, 7, 1, 12, 2])
    params = dict(temperature=torch.tensor([1.0, 0.7, 1.3, 1.0, 0.0, 1.0]), top_k=torch.tensor([5] * 6),
                  top_p=torch.tensor([0.9, 1.0, 0.95, 0.8, 1.0, 1.0]))
    batched = sample_tokens(logits, seeds=seeds, step=steps, width=5, **params)
    for r in range(6):
        one = sample_tokens(logits[r:r + 1], seeds=seeds[r:r + 1], step=int(steps[r]),
                            **{k: v[r:r + 1] for k, v in params.items()})
        assert int(batched[r]) == int(one[0])
    assert not torch.equal(gumbel_noise(seeds, steps, torch.arange(50).expand(6, -1)),
                           gumbel_noise(seeds, 0, torch.arange(50).expand(6, -1)))
