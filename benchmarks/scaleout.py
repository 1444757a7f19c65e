"""Scaling of the ``ray`` evaluation backend: episodes/s at 1, 2 and 4 workers on a latency-bound cell.

The cell is the demo's evaluation (9 domains x SEEDS seeds x 2 buyers) with scripted agents whose
every reply takes ``--latency`` seconds (an LLM endpoint's round trip, without the endpoint's own
CPU cost), so the work is latency-bound as API evaluation is. Each worker keeps ``--concurrency``
episodes in flight; the driver writes every shard (fsync) and compacts the tables, as the
evaluate stage does. The local backend at the same concurrency is the one-process reference.
Printed per run: episodes, wall seconds (worker start-up included), episodes/s and scaling
efficiency = rate(n) / (n x rate(1)); then the same from the first stored episode to the last
(steady state: each worker's start-up, mostly importing the package, left out).

    python benchmarks/scaleout.py [--seeds 32] [--latency 0.05] [--concurrency 8] [--workers 1,2,4]
    python benchmarks/scaleout.py --small       # CI: 2 seeds, 10 ms replies, 4 in flight, 1 and 2 workers

Starts a local Ray instance with as many CPUs as the largest worker count (or joins $RAY_ADDRESS),
as the ``ray`` backend does (``negotiation.evaluation.start_ray``: a private temp folder, a 256 MiB
object store, no dashboard).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from negotiation.agents._llm_retry import RetryPolicy  # noqa: E402
from negotiation.evaluation import (ExecutionBackend, RunOptions, agent_factory, build_cell,  # noqa: E402
                                    evaluate_cell, start_ray, stop_ray)
from negotiation.study import load_study  # noqa: E402


class Delayed:
    """A scripted agent whose replies take ``latency`` seconds (an endpoint's round trip)."""

    def __init__(self, inner: Any, latency: float):
        self.inner, self.latency, self.spec = inner, latency, inner.spec

    async def arespond(self, view: Any) -> Any:
        await asyncio.sleep(self.latency)
        return self.inner.respond(view)


def factory(latency: float):
    protocol = load_study("demo").protocol
    build = agent_factory(protocol, retry=RetryPolicy(), max_concurrency=64)
    return lambda spec, role: Delayed(build(spec, role), latency)


def run(backend: ExecutionBackend, seeds: int, latency: float, concurrency: int) -> tuple[int, float, float]:
    """``(episodes, wall seconds, steady seconds)``: steady runs from the first stored episode to the
    last (worker start-up, i.e. importing the package in each worker, left out)."""
    protocol = load_study("demo").protocol
    cell = build_cell(protocol, arm="bench", seller="scripted:boulware",
                      seeds=tuple(range(5_000_000, 5_000_000 + seeds)))
    stored: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = asyncio.run(evaluate_cell(cell, out, protocol, protocol_hash="bench", make_agent=factory(latency),
                                           on_progress=lambda phase, p: stored.append(time.perf_counter()),
                                           options=RunOptions(pilot=False, concurrency=concurrency, backend=backend)))
        wall = time.perf_counter() - start
    n = len(result.episodes)
    # n - 1 intervals between the first and the last stored episode
    return n, wall, (stored[-1] - stored[0]) * n / max(1, n - 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--concurrency", type=int, default=8, help="episodes in flight per worker")
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--small", action="store_true", help="CI: --seeds 2 --latency 0.01 --concurrency 4 --workers 1,2")
    args = p.parse_args()
    if args.small:
        args.seeds, args.latency, args.concurrency, args.workers = 2, 0.01, 4, "1,2"
    counts = [int(w) for w in args.workers.split(",")]
    start_ray(num_cpus=max(counts))
    try:
        table(args, counts)
    finally:
        stop_ray()


def table(args: argparse.Namespace, counts: list[int]) -> None:
    """The local reference row, then one row per worker count."""
    print(f"cell: 9 domains x {args.seeds} seeds x 2 buyers, {args.latency * 1000:.0f} ms per reply, "
          f"{args.concurrency} episodes in flight per worker, {os.cpu_count()} CPUs here")
    print(f"{'':>18} {'episodes':>8} {'wall s':>7} {'ep/s':>7} {'eff.':>5}   {'steady s':>8} {'ep/s':>7} {'eff.':>5}")
    n, wall, steady = run(ExecutionBackend(), args.seeds, args.latency, args.concurrency)
    print(f"{'local (reference)':>18} {n:8d} {wall:7.2f} {n / wall:7.2f} {'':>5}   {steady:8.2f} {n / steady:7.2f}")
    base: tuple[float, float] | None = None
    for workers in counts:
        n, wall, steady = run(ExecutionBackend(kind="ray", workers=workers), args.seeds, args.latency, args.concurrency)
        rates = (n / wall, n / steady)
        base = base or (rates[0] / workers, rates[1] / workers)
        print(f"{f'ray, {workers} workers':>18} {n:8d} {wall:7.2f} {rates[0]:7.2f} {rates[0] / (workers * base[0]):5.2f}"
              f"   {steady:8.2f} {rates[1]:7.2f} {rates[1] / (workers * base[1]):5.2f}")


if __name__ == "__main__":
    main()
