"""Requests- and tokens-per-minute limits per provider, shared by every cell of a process.

Providers publish limits per account (e.g. 500 requests and 200k tokens a minute). Backing off
after a 429 wastes the call and, with many cells in flight, makes them all retry together; a
limiter spends the budget evenly instead. Each provider has two token buckets, refilled
continuously at ``limit / 60`` per second and holding at most one minute's worth (so a fresh
process may burst one minute's budget, then settles to the rate). A request takes one request
and its estimated tokens before it is sent (each retry is a request too); when the reply
arrives the estimate is replaced by the tokens the provider counted, so a bucket may go below
zero and later requests wait it off. Waiters are served in arrival order.

Limits are a run-time knob (``rate_limits`` in params.yaml, never a stage param: they change
how fast a cell runs, not what it produces)::

    rate_limits:
      openai: {requests_per_minute: 500, tokens_per_minute: 200000}
      anthropic: {requests_per_minute: 50}

``configure_rate_limits`` installs them for the process; ``provider_limiter(provider)`` is the
one limiter every agent of that provider awaits (``None`` when the provider has no limit).
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from negotiation.errors import ConfigError

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]


class RateLimit(BaseModel):
    """One provider's limits; an absent limit is not enforced."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: int = 1
    """Schema version of this record."""
    requests_per_minute: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Requests the provider accepts per minute (every retry is a request)."""
    tokens_per_minute: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Prompt plus completion tokens per minute, as the provider counts them."""

    @model_validator(mode="after")
    def _some_limit(self) -> RateLimit:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("give requests_per_minute, tokens_per_minute or both")
        return self


class _Bucket:
    """A continuously refilled budget of ``per_minute`` units holding at most one minute's worth."""

    def __init__(self, per_minute: float, now: float):
        self.rate = per_minute / 60.0
        self.capacity = per_minute
        self.level = per_minute
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` (capped at the capacity) is available."""
        missing = min(amount, self.capacity) - self.level
        return max(0.0, missing / self.rate)


class RateLimiter:
    """The requests and tokens budget of one provider."""

    def __init__(self, limit: RateLimit, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep):
        self.limit, self._clock, self._sleep = limit, clock, sleep
        now = clock()
        self._requests = _Bucket(limit.requests_per_minute, now) if limit.requests_per_minute else None
        self._tokens = _Bucket(limit.tokens_per_minute, now) if limit.tokens_per_minute else None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop not in self._locks:
            self._locks[loop] = asyncio.Lock()
        return self._locks[loop]

    def _buckets(self) -> list[tuple[_Bucket, str]]:
        return [(b, kind) for b, kind in ((self._requests, "requests"), (self._tokens, "tokens")) if b is not None]

    async def acquire(self, tokens: int = 0) -> float:
        """Wait until one request and ``tokens`` tokens are available, take them; seconds waited."""
        waited = 0.0
        async with self._lock():  # FIFO: a waiting request is not overtaken by later ones
            while True:
                now = self._clock()
                delay = 0.0
                for bucket, kind in self._buckets():
                    bucket.refill(now)
                    delay = max(delay, bucket.wait_for(1.0 if kind == "requests" else float(tokens)))
                if delay <= 0:
                    break
                await self._sleep(delay)
                waited += delay
            if self._requests is not None:
                self._requests.level -= 1.0
            if self._tokens is not None:
                self._tokens.level -= float(tokens)
        return waited

    def settle(self, estimated: int, actual: int) -> None:
        """Replace a request's token estimate by the tokens the provider counted."""
        if self._tokens is not None:
            self._tokens.refill(self._clock())
            self._tokens.level += float(estimated) - float(actual)


_LIMITERS: dict[str, RateLimiter] = {}


def configure_rate_limits(limits: Mapping[str, RateLimit], *, clock: Clock = time.monotonic,
                          sleep: Sleep = asyncio.sleep) -> None:
    """Install the process's limits (replacing earlier ones); a provider keeps its budget when its
    limit is unchanged, so reconfiguring between cells never grants a fresh burst."""
    fresh = {}
    for provider, limit in limits.items():
        old = _LIMITERS.get(provider)
        fresh[provider] = old if old is not None and old.limit == limit else RateLimiter(limit, clock=clock,
                                                                                           sleep=sleep)
    _LIMITERS.clear()
    _LIMITERS.update(fresh)


def configured_rate_limits() -> dict[str, RateLimit]:
    """The limits installed in this process, by provider (what a cluster-wide limiter enforces)."""
    return {provider: limiter.limit for provider, limiter in _LIMITERS.items()}


def install_limiters(limiters: Mapping[str, Any]) -> None:
    """Install ready limiters (replacing the process's): objects with ``await acquire(tokens)``
    and ``settle(estimated, actual)``, e.g. proxies of one limiter a whole cluster shares."""
    _LIMITERS.clear()
    _LIMITERS.update(limiters)


def provider_limiter(provider: str) -> RateLimiter | None:
    """The limiter every agent of ``provider`` in this process shares, if it has a limit."""
    return _LIMITERS.get(provider)


def estimate_tokens(messages: list[dict[str, Any]], max_tokens: Any) -> int:
    """Tokens a request may use before the provider counts them: about four characters a prompt
    token, plus the completion budget when one is set."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    budget = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0 else 0
    return math.ceil(chars / 4) + budget


def rate_limits_from_params(params_file: Path) -> dict[str, RateLimit]:
    """The ``rate_limits`` section of ``params_file`` (empty when the file or section is absent)."""
    path = Path(params_file)
    if not path.exists():
        return {}
    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: cannot read YAML: {exc}") from None
    section = params.get("rate_limits") if isinstance(params, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}:rate_limits: expected a mapping of provider to limits, got {section!r}")
    limits = {}
    for provider, spec in section.items():
        if not isinstance(provider, str) or not isinstance(spec, dict):
            raise ConfigError(f"{path}:rate_limits.{provider}: expected a mapping such as "
                              f"{{requests_per_minute: 500, tokens_per_minute: 200000}}, got {spec!r}")
        try:
            limits[provider] = RateLimit.model_validate(spec)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            suffix = f".{where}" if where else ""
            raise ConfigError(f"{path}:rate_limits.{provider}{suffix}: {first['msg']} "
                              f"(got {first.get('input')!r})") from None
    return limits
