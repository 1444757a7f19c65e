"""TurnRandom draws exactly what numpy.random.default_rng(entropy) draws (the prose stream)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.agents._turn_rng import TurnRandom

words = st.integers(min_value=0, max_value=2**32 - 1)
draws = st.lists(st.one_of(st.integers(min_value=1, max_value=2**32), st.none()), min_size=1, max_size=16)


@settings(max_examples=400, deadline=None)
@given(entropy=st.lists(words, min_size=1, max_size=4), sequence=draws)
def test_same_draws_as_numpy(entropy, sequence):
    ours, numpy_rng = TurnRandom(entropy), np.random.default_rng(entropy)
    for high in sequence:  # None: a random() draw between bounded integers, as the templates mix them
        if high is None:
            assert ours.random() == numpy_rng.random()
        else:
            assert ours.integers(high) == int(numpy_rng.integers(high))


@settings(max_examples=50, deadline=None)
@given(entropy=st.lists(st.integers(min_value=0, max_value=2**70), min_size=5, max_size=7))
def test_long_or_wide_entropy_falls_back_to_numpy(entropy):
    ours, numpy_rng = TurnRandom(entropy), np.random.default_rng(entropy)
    assert [ours.integers(6) for _ in range(5)] == [int(numpy_rng.integers(6)) for _ in range(5)]
    assert ours.random() == numpy_rng.random()


def test_turn_entropy_of_the_agents():
    for seed in (0, 1, 5_000_053, 2**32 - 1):
        for turn in range(1, 25):
            for salt in (0, 1, 7):
                ours, numpy_rng = TurnRandom([seed, turn, salt]), np.random.default_rng([seed, turn, salt])
                assert (ours.integers(4), ours.random(), ours.integers(6)) == (
                    int(numpy_rng.integers(4)), numpy_rng.random(), int(numpy_rng.integers(6)))


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="positive"):
        TurnRandom([1]).integers(0)
    with pytest.raises(ValueError, match="2\\*\\*32"):
        TurnRandom([1]).integers(2**32 + 1)
