"""``turn_rng`` is numpy's ``default_rng([sample_seed, turn, salt])``: the same generator, so the
prose (and the policy's samples) stay what that call draws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.agents._prose import turn_rng

_WORDS = st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 2**70), st.sampled_from([0, 1, 2**32 - 1, 2**32]))


def _draws(rng: np.random.Generator) -> list:
    return [int(rng.integers(4)), float(rng.random()), int(rng.integers(6)), int(rng.integers(5)),
            rng.random(3).tolist()]


@settings(max_examples=300, deadline=None)
@given(_WORDS, st.integers(0, 2**33), st.sampled_from([0, 1, 7001, 7002, 2**32 - 1, 2**40]))
def test_turn_rng_draws_what_default_rng_draws(seed, turn, salt):
    assert _draws(turn_rng(seed, turn, salt)) == _draws(np.random.default_rng([seed, turn, salt]))


@pytest.mark.parametrize("words", [(-1, 3, 0), (5, -2, 1)])
def test_turn_rng_rejects_negative_words_as_numpy_does(words):
    with pytest.raises(ValueError):
        np.random.default_rng(list(words))
    with pytest.raises(ValueError):
        turn_rng(*words)
