"""What runs on the Ray cluster: episode workers, a served seller, the shared rate limiter.

None of these writes anything: workers stream finished episodes back to the driver, which is
the results store's only writer (``_ray.run_todo_ray``). Imported only by the ``ray`` backend.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from negotiation.agents import RateLimit, RateLimiter, install_limiters, parse_spec
from negotiation.env import EnvConfig
from negotiation.evaluation._cell import AgentFactory, AgentPool, CellSpec, play_episode
from negotiation.evaluation._store import Key

LIMITER_NAME = "negotiation-rate-limits"
"""The one named limiter actor of a cluster (per Ray namespace): every driver and worker shares it."""


def with_option(spec: str, key: str, value: str) -> str:
    """``spec`` with option ``key=value`` added (``kind:target?a=1`` -> ``...&key=value``)."""
    return f"{spec}{'&' if '?' in spec else '?'}{key}={value}"


class SharedLimits:
    """Per-provider ``RateLimiter``s for the whole cluster (a Ray actor; same semantics as one
    process's limiters: FIFO, one request and the estimated tokens per attempt, settled later)."""

    def __init__(self, limits: dict[str, RateLimit]):
        self.limiters = {provider: RateLimiter(limit) for provider, limit in limits.items()}
        self.taken: dict[str, int] = {}

    def configure(self, limits: dict[str, RateLimit]) -> None:
        """Adopt a driver's limits; an unchanged limit keeps its budget (no fresh burst)."""
        for provider, limit in limits.items():
            current = self.limiters.get(provider)
            if current is None or current.limit != limit:
                self.limiters[provider] = RateLimiter(limit)

    async def acquire(self, provider: str, tokens: int) -> float:
        waited = await self.limiters[provider].acquire(tokens)
        self.taken[provider] = self.taken.get(provider, 0) + 1
        return waited

    def requests(self) -> dict[str, int]:
        """Requests granted per provider since the actor started (all drivers and workers)."""
        return dict(self.taken)

    def settle(self, provider: str, estimated: int, actual: int) -> None:
        self.limiters[provider].settle(estimated, actual)


class LimiterProxy:
    """A worker's stand-in for one provider's cluster-wide limiter (what agents await)."""

    def __init__(self, actor: Any, provider: str):
        self.actor, self.provider = actor, provider

    async def acquire(self, tokens: int = 0) -> float:
        return await self.actor.acquire.remote(self.provider, tokens)

    def settle(self, estimated: int, actual: int) -> None:
        self.actor.settle.remote(self.provider, estimated, actual)  # ordered after this worker's acquires


class SellerServer:
    """Owns a served seller (``vllm:``), as a Ray actor holding the serving GPUs.

    The server binds the node's address so workers on any node reach it; it stops (its whole
    process group) when the actor is told to or dies, and the actor's GPUs return to the cluster.
    """

    def __init__(self, factory: AgentFactory, spec: str, host: str):
        served = spec if parse_spec(spec).option("host", None) else with_option(spec, "host", host)
        self.agent = factory(served, "seller")

    async def start(self) -> str:
        """Start the server; its OpenAI-compatible base URL."""
        await self.agent.astart()
        return self.agent.server.api_base

    def gpu_ids(self) -> list[Any]:
        import ray

        return ray.get_gpu_ids()

    async def stop(self) -> None:
        await self.agent.aclose()


def worker_factory(factory: AgentFactory, seller: str, seller_api_base: str | None) -> AgentFactory:
    """``factory``, except that a served seller talks to ``seller_api_base`` (the seller actor's
    server) while keeping its own spec, so rows name the same seller as a local run."""
    if seller_api_base is None:
        return factory

    def build(spec: str, role: str) -> Any:
        if role != "seller" or spec != seller:
            return factory(spec, role)
        agent = factory(with_option(spec, "api_base", seller_api_base), role)
        agent.spec = spec
        if getattr(agent, "record", None) is not None:
            agent.record.agent = spec
        return agent

    return build


class EpisodeWorker:
    """Plays episodes of one cell and streams them back; holds its agents between tasks."""

    def __init__(self, cell: CellSpec, env: EnvConfig, factory: AgentFactory, limiter: Any | None,
                 providers: list[str]):
        self.cell, self.env = cell, env
        self.pool = AgentPool(factory)
        if limiter is not None:
            install_limiters({p: LimiterProxy(limiter, p) for p in providers})

    async def play(self, items: list[tuple[Key, int]], concurrency: int) -> AsyncIterator[tuple[Any, ...]]:
        """Yield ``(key, attempt, episode row, turn rows)`` per finished episode, as they finish."""
        seller = await self.pool.get(self.cell.seller, "seller")
        buyers = {label: await self.pool.get(self.cell.buyers[label], "buyer") for label in {k[3] for k, _ in items}}
        slots = asyncio.Semaphore(concurrency)

        async def one(key: Key, attempt: int) -> tuple[Any, ...]:
            async with slots:
                row, turns = await play_episode(key, attempt, self.cell, seller, buyers[key[3]], self.env)
            return key, attempt, row, turns

        tasks = [asyncio.ensure_future(one(key, attempt)) for key, attempt in items]
        try:
            for finished in asyncio.as_completed(tasks):
                yield await finished
        finally:
            for task in tasks:
                task.cancel()

    def records(self) -> dict[tuple[str, str], dict[str, str]]:
        """What each agent's provider refused at run time (``SamplingLog.rejected``)."""
        return {key: dict(agent.record.rejected) for key, agent in self.pool.agents.items()
                if key in self.pool.started and getattr(agent, "record", None) is not None}

    async def close(self) -> None:
        await self.pool.aclose()
