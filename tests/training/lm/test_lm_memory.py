"""Gradient checkpointing where memory needs it: the decision rule, and the probe off CUDA."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.training.lm._memory import HEADROOM, checkpointing_needed, needs_checkpointing
from tests.training.lm.bigram_lm import BigramLm

GB = 2**30


def test_a_probe_that_ran_out_of_memory_needs_checkpointing():
    assert checkpointing_needed(None, 0, 80 * GB)


def test_the_moments_yet_to_come_count_against_the_headroom():
    total = 80 * GB
    assert not checkpointing_needed(60 * GB, 8 * GB, total)  # 68 of 72 usable
    assert checkpointing_needed(60 * GB, 13 * GB, total)     # 73 of 72 usable


@given(st.integers(0, 200 * GB), st.integers(0, 50 * GB), st.integers(1, 200 * GB))
@settings(max_examples=100, deadline=None)
def test_the_rule_is_peak_plus_moments_against_the_usable_share(peak, moments, total):
    assert checkpointing_needed(peak, moments, total) == (peak + moments > HEADROOM * total)


def test_off_cuda_nothing_is_probed_and_nothing_is_needed():
    model, reference = BigramLm(), BigramLm()
    model.eval()
    assert not needs_checkpointing(model, reference, micro_batch_tokens=64, context_tokens=16, pad_id=0)
    assert not model.training and all(p.grad is None for p in model.parameters())
