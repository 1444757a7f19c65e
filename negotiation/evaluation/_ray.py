"""The ``ray`` backend's driver (``run_cell_ray``): a cell's episodes played by workers on a Ray cluster, stored here.

Exactly once, by construction:

- the driver plans the cell from its results store (``ResultsStore.plan``, as a local run does)
  and is the store's ONLY writer: workers stream each finished episode back and the driver
  writes it as one shard (atomic, fsynced) the moment it arrives;
- a worker that dies (SIGKILL, OOM, lost node) takes only the episodes it had not streamed
  back: the driver hands exactly those (same keys, same attempt numbers) to a fresh worker,
  and a replayed episode is the same episode (its draws depend on key and seed only);
- a driver that dies leaves whole shards; the rerun's plan skips them and plays what is missing.

Work is split per buyer into tasks of consecutive scenarios; each worker (one CPU) keeps
``concurrency`` episodes in flight. A ``vllm:`` seller is served once for the cell by a
``SellerServer`` actor reserving ``num_gpus`` = the protocol's serving tensor parallelism; the
workers talk to its server. Buyers' API limits (``rate_limits``) are enforced per provider for
the whole cluster by one named ``SharedLimits`` actor.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from typing import Any, Callable

import ray
from ray.exceptions import ObjectLostError, RayActorError, RayTaskError, WorkerCrashedError

from negotiation.agents import agent_kind, configured_rate_limits, parse_spec
from negotiation.env import EnvConfig
from negotiation.errors import NegotiationError
from negotiation.evaluation._backend import ExecutionBackend
from negotiation.evaluation._cell import AgentPool, CellProgress, CellSpec, plan_cell
from negotiation.evaluation._ray_actors import LIMITER_NAME, EpisodeWorker, SellerServer, SharedLimits, worker_factory
from negotiation.evaluation._ray_local import start_ray, stop_ray
from negotiation.evaluation._store import Key, ResultsStore

WORKER_LOST = (RayActorError, WorkerCrashedError, ObjectLostError)
"""A worker (or its node) went away: its unreturned episodes are replayed elsewhere."""


class WorkerLossError(NegotiationError):
    """More workers died than ``max_worker_losses`` allows (every returned episode is stored)."""


def tasks_of(todo: list[tuple[Key, int]], size: int) -> list[list[tuple[Key, int]]]:
    """``todo`` split per buyer into runs of at most ``size`` consecutive scenarios, in order."""
    by_buyer: dict[str, list[tuple[Key, int]]] = {}
    for item in todo:
        by_buyer.setdefault(item[0][3], []).append(item)
    return [items[i:i + size] for items in by_buyer.values() for i in range(0, len(items), size)]


def worker_count(backend: ExecutionBackend, tasks: int) -> int:
    """Workers to start: the backend's, else the cluster's CPUs; never more than there are tasks."""
    wanted = backend.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    return max(1, min(wanted, tasks))


def shared_limiter() -> tuple[Any | None, list[str]]:
    """The cluster's limiter actor, holding this process's ``rate_limits`` (None without limits)."""
    limits = configured_rate_limits()
    if not limits:
        return None, []
    actor = ray.remote(SharedLimits).options(name=LIMITER_NAME, get_if_exists=True, lifetime="detached",
                                             num_cpus=0).remote(limits)
    ray.get(actor.configure.remote(limits))
    return actor, sorted(limits)


async def start_seller(factory: Any, spec: str, gpus: int) -> tuple[Any, str]:
    """A ``SellerServer`` actor reserving ``gpus`` GPUs, started; ``(actor, api_base)``."""
    host = ray.util.get_node_ip_address()
    actor = ray.remote(SellerServer).options(num_gpus=gpus, num_cpus=1, max_restarts=0).remote(factory, spec, host)
    return actor, await actor.start.remote()


async def run_cell_ray(cell: CellSpec, store: ResultsStore, env: EnvConfig, pool: AgentPool, *,
                       concurrency: int, retry_errors: bool, buyers: list[str] | None,
                       on_progress: Callable[[CellProgress], None] | None, backend: ExecutionBackend,
                       seller_gpus: int) -> CellProgress:
    """``run_cell`` on the cluster: plan from ``store``, play what is missing on workers, write each
    returned episode into ``store`` (see the module doc); the progress totals of this invocation.

    Args:
        cell, store, env, concurrency, retry_errors, buyers, on_progress: as for ``run_cell``;
            ``concurrency`` is per worker.
        pool: the driver's agents (their factory builds the workers'; the records of what they sent).
        backend: workers, task size, worker losses tolerated.
        seller_gpus: GPUs the served seller's actor reserves (the protocol's serving tensor parallelism).
    """
    todo, progress = plan_cell(cell, store, buyers, retry_errors)
    if todo:
        await _run_todo_ray(cell, store, env, pool, todo, backend, concurrency, seller_gpus, progress, on_progress)
    return progress


async def _run_todo_ray(cell: CellSpec, store: ResultsStore, env: EnvConfig, pool: AgentPool,
                        todo: list[tuple[Key, int]], backend: ExecutionBackend, concurrency: int,
                        seller_gpus: int, progress: CellProgress,
                        on_progress: Callable[[CellProgress], None] | None) -> None:
    started = start_ray()  # joins $RAY_ADDRESS, else a local head sized for small machines (_ray_local)
    seller_actor = None
    try:
        factory = pool.factory
        served = agent_kind(cell.seller).served and parse_spec(cell.seller).option("api_base", None) is None
        api_base = None
        if served:
            seller_actor, api_base = await start_seller(factory, cell.seller, seller_gpus)
        limiter, providers = shared_limiter()
        tasks = tasks_of(todo, backend.episodes_per_task or max(1, math.ceil(len(todo) / (4 * _cpus(backend)))))
        new_worker = lambda: ray.remote(EpisodeWorker).options(num_cpus=1, max_restarts=0).remote(  # noqa: E731
            cell, env, worker_factory(factory, cell.seller, api_base), limiter, providers)
        await _drain(deque(tasks), worker_count(backend, len(tasks)), new_worker, store, pool, concurrency,
                     backend.max_worker_losses, progress, on_progress)
    finally:
        if seller_actor is not None:
            await _stop(seller_actor)
        if started:
            stop_ray()


def _cpus(backend: ExecutionBackend) -> int:
    return backend.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))


async def _stop(actor: Any) -> None:
    try:
        await actor.stop.remote()
    finally:
        ray.kill(actor, no_restart=True)


async def _drain(tasks: deque, workers: int, new_worker: Callable[[], Any], store: ResultsStore, pool: AgentPool,
                 concurrency: int, max_losses: int, progress: CellProgress,
                 on_progress: Callable[[CellProgress], None] | None) -> None:
    """Each worker slot takes tasks until none is left; a lost worker's unreturned episodes go
    back to the front of the queue and the slot starts a fresh worker."""
    losses = 0

    async def slot() -> None:
        nonlocal losses
        actor = None
        while tasks:
            items = tasks.popleft()
            actor = actor or new_worker()
            pending = dict.fromkeys(items)
            try:
                async for ref in actor.play.remote(items, concurrency):
                    key, attempt, row, turns = await ref
                    await asyncio.to_thread(store.write, key, attempt, row, turns)
                    del pending[(key, attempt)]
                    progress.add(row)
                    if on_progress is not None:
                        on_progress(progress)
            except RayTaskError as err:  # the worker's code raised: a bug, as in a local run
                raise err.as_instanceof_cause() from None
            except WORKER_LOST as err:
                if getattr(err, "actor_init_failed", False):  # the worker could not be built: no loss, a bug
                    raise
                losses += 1
                if losses > max_losses:
                    raise WorkerLossError(f"{losses} episode workers lost (max_worker_losses={max_losses}); "
                                          f"every returned episode is stored, rerun to play the rest: {err}") from err
                tasks.appendleft(list(pending))
                ray.kill(actor, no_restart=True)
                actor = None
        if actor is not None:
            for key, rejected in (await actor.records.remote()).items():
                pool.played_remotely(*key, rejected)
            await actor.close.remote()
            ray.kill(actor, no_restart=True)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(slot())
    except ExceptionGroup as group_error:
        raise group_error.exceptions[0] from group_error
