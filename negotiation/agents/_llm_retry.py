"""Retries with exponential backoff and jitter, and a concurrency bound per endpoint.

A transient failure (429, 5xx, timeout, dropped connection, malformed body) is retried after
``min(max_delay, base * 2**attempt)`` seconds scaled by a jitter factor in [0.5, 1) drawn from
the caller's generator, and never sooner than the ``Retry-After`` the server asked for. A
permanent failure, or a transient one that outlives ``max_attempts``, raises
``AgentCallError``: the cell runner turns it into an error row, never into a move. The
endpoint's slot is released while waiting, so a backing-off call does not block others.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Awaitable, Callable, Sequence, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents._llm_transport import CallFailure

T = TypeVar("T")
_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = \
    weakref.WeakKeyDictionary()


MAX_BACKOFF_S = 3600.0
"""Longest backoff a policy may ask for between two attempts (one hour)."""


class RetryPolicy(BaseModel):
    """How transient failures are retried."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    max_attempts: int = Field(default=8, ge=1)
    """Attempts per call, the first included."""
    base_delay_s: float = Field(default=1.0, ge=0, le=MAX_BACKOFF_S)
    """Backoff before the second attempt (before jitter); at most ``MAX_BACKOFF_S``."""
    max_delay_s: float = Field(default=60.0, ge=0, le=MAX_BACKOFF_S)
    """Backoff cap (before jitter); at most ``MAX_BACKOFF_S``, so a call's retries end."""
    max_retry_after_s: float = Field(default=600.0, ge=0)
    """Longest ``Retry-After`` honoured; a server asking for more is waited on this long."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Longest wait for any one part of a reply (connecting, each read); the whole request, from
    sending it to the reply's last byte, gets at most ``DEADLINE_FACTOR`` times this, so a provider
    that sends headers and then dribbles a byte at a time is cut off."""
    max_reply_bytes: int = Field(default=8 * 2**20, gt=0)
    """Largest reply body read (8 MiB by default; a chat completion is kilobytes): a longer one is
    a failed call, read no further, so a runaway body never fills memory or the results."""


class AgentCallError(Exception):
    """An agent's call failed for good: permanent, or retries exhausted."""

    def __init__(self, failure: CallFailure, *, retries: int, spec: str, role: str):
        exhausted = " (retries exhausted)" if failure.transient else ""
        super().__init__(f"{role} {spec}: {failure.error_class}{exhausted}: {failure.message}")
        self.error_class = failure.error_class
        self.message = failure.message + exhausted
        self.transient = failure.transient
        self.retries = retries
        self.spec = spec
        self.role = role


def backoff_delay(policy: RetryPolicy, attempt: int, rng: np.random.Generator,
                  retry_after: float | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
    delay = min(policy.max_delay_s, policy.base_delay_s * 2.0 ** attempt) * (0.5 + 0.5 * rng.random())
    if retry_after is not None:
        delay = max(delay, min(retry_after, policy.max_retry_after_s))
    return delay


def endpoint_semaphore(endpoint: str, limit: int) -> asyncio.Semaphore:
    """The running loop's semaphore bounding concurrent requests to ``endpoint``.

    Agents that talk to one endpoint (a self-play cell's seller and buyer) share the bound; the
    first caller's ``limit`` sizes it.
    """
    loop = asyncio.get_running_loop()
    per_loop = _SEMAPHORES.setdefault(loop, {})
    if endpoint not in per_loop:
        per_loop[endpoint] = asyncio.Semaphore(limit)
    return per_loop[endpoint]


async def call_with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy,
                            jitter_seed: Sequence[int], *, semaphore: asyncio.Semaphore | None = None,
                            on_failure: Callable[[CallFailure], bool] | None = None) -> tuple[T, int]:
    """``(result, retries)`` of ``call`` under ``policy``; raises ``CallFailure`` when it gives up.

    The jitter generator is seeded from ``jitter_seed`` and built only when a retry is needed
    (building one costs more than a successful call's bookkeeping).

    ``on_failure`` may handle a failure itself (e.g. drop a parameter the provider refused) by
    returning True: the call is then repeated at once and not counted as a retry.
    """
    retries = 0
    attempt = 0
    rng: np.random.Generator | None = None
    while True:
        try:
            if semaphore is None:
                return await call(), retries
            async with semaphore:
                return await call(), retries
        except CallFailure as failure:
            if on_failure is not None and on_failure(failure):
                continue
            attempt += 1
            if not failure.transient or attempt >= policy.max_attempts:
                failure.retries = retries  # type: ignore[attr-defined]
                raise
            retries += 1
            rng = rng or np.random.default_rng(list(jitter_seed))
            await asyncio.sleep(backoff_delay(policy, attempt - 1, rng, failure.retry_after))
