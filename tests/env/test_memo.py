"""The memos' admission rule (env.SecondSight): an entry is stored the second time its key is met."""

from __future__ import annotations

from hypothesis import given, strategies as st

from negotiation.env import SecondSight


@given(st.lists(st.integers(min_value=-2**63, max_value=2**63), max_size=200), st.integers(1, 50))
def test_a_key_is_met_before_exactly_when_it_came_since_the_last_reset(keys, limit):
    sight, since_reset = SecondSight(limit), set()
    for key in keys:
        expected = key in since_reset
        if not expected and len(since_reset) >= limit:
            since_reset.clear()  # full: it starts over, so memory stays bounded
        assert sight.met_before(key) is expected
        since_reset.add(key)
        assert len(since_reset) <= limit
