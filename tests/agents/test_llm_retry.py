"""Retries: exponential backoff with jitter, Retry-After honoured, permanent failures never retried."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from negotiation.agents._llm_retry import RetryPolicy, backoff_delay, call_with_retries, endpoint_semaphore
from negotiation.agents._llm_transport import CallFailure

POLICY = RetryPolicy(max_attempts=4, base_delay_s=1.0, max_delay_s=5.0, max_retry_after_s=30.0)


class FixedRng:
    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def test_backoff_doubles_then_caps_with_jitter_in_half_to_full():
    # jitter factor 0.5 + 0.5 * u: u=0 -> half, u=1 -> full
    assert [backoff_delay(POLICY, a, FixedRng(1.0)) for a in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert [backoff_delay(POLICY, a, FixedRng(0.0)) for a in range(4)] == [0.5, 1.0, 2.0, 2.5]
    assert backoff_delay(POLICY, 1, FixedRng(0.5)) == 1.5


def test_retry_after_is_a_lower_bound_capped_by_policy():
    assert backoff_delay(POLICY, 0, FixedRng(1.0), retry_after=7.0) == 7.0
    assert backoff_delay(POLICY, 2, FixedRng(1.0), retry_after=0.5) == 4.0
    assert backoff_delay(POLICY, 0, FixedRng(1.0), retry_after=3600.0) == 30.0


@given(attempt=st.integers(0, 40), u=st.floats(0, 1, exclude_max=True), after=st.none() | st.floats(0, 1e6))
def test_backoff_is_bounded(attempt, u, after):
    delay = backoff_delay(POLICY, attempt, FixedRng(u), after)
    assert 0.0 <= delay <= max(POLICY.max_delay_s, POLICY.max_retry_after_s)
    if after is not None:
        assert delay >= min(after, POLICY.max_retry_after_s)


def script(*outcomes):
    """A call that fails with the given failures in order, then returns "ok"."""
    calls = []

    async def call():
        calls.append(1)
        if len(calls) <= len(outcomes):
            raise outcomes[len(calls) - 1]
        return "ok"

    return call, calls


FAST = RetryPolicy(max_attempts=4, base_delay_s=0.0, max_delay_s=0.0)


def transient():
    return CallFailure("RateLimitError", "slow down", transient=True, retry_after=0.0)


def test_transient_failures_are_retried_and_counted():
    call, calls = script(transient(), transient())
    assert asyncio.run(call_with_retries(call, FAST, (1, 2, 3))) == ("ok", 2)
    assert len(calls) == 3


def test_permanent_failure_raises_at_once():
    call, calls = script(CallFailure("BadRequestError", "no", transient=False))
    with pytest.raises(CallFailure, match="BadRequestError"):
        asyncio.run(call_with_retries(call, FAST, (1,)))
    assert len(calls) == 1


def test_retries_exhausted_after_max_attempts():
    call, calls = script(*[transient() for _ in range(10)])
    with pytest.raises(CallFailure) as info:
        asyncio.run(call_with_retries(call, FAST, (1,)))
    assert len(calls) == 4 and info.value.retries == 3


def test_a_handled_failure_is_repeated_without_counting_a_retry():
    refused = CallFailure("BadRequestError", "temperature unsupported", transient=False, param="temperature")
    call, calls = script(refused, transient())
    handled = []
    got = asyncio.run(call_with_retries(call, FAST, (1,), on_failure=lambda f: handled.append(f) or f is refused))
    assert got == ("ok", 1) and handled[0] is refused and len(calls) == 3


def test_waits_for_retry_after():
    call, _ = script(CallFailure("RateLimitError", "wait", transient=True, retry_after=0.2))
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0)

    async def timed():
        start = asyncio.get_running_loop().time()
        await call_with_retries(call, policy, (1,))
        return asyncio.get_running_loop().time() - start

    assert asyncio.run(timed()) >= 0.19


def test_jitter_is_seeded():
    policy = RetryPolicy(max_attempts=3, base_delay_s=1.0, max_delay_s=1.0)
    waits = [backoff_delay(policy, 0, np.random.default_rng([7, 3, 0])) for _ in range(2)]
    assert waits[0] == waits[1] and 0.5 <= waits[0] < 1.0


def test_one_semaphore_per_endpoint_and_loop():
    async def both():
        a, b = endpoint_semaphore("http://x/v1", 3), endpoint_semaphore("http://x/v1", 99)
        c = endpoint_semaphore("http://y/v1", 2)
        return a is b, a._value, c is a

    assert asyncio.run(both()) == (True, 3, False)
    assert asyncio.run(both()) == (True, 3, False)  # a new loop gets fresh semaphores
