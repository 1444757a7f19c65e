"""Harness throughput against the stand-in server, side by side with a raw async client.

Both sides run at the same concurrency (default 64) against one stand-in server in its own
process. The harness side is the real cell runner (prompt rendering, engine, parsing, retries,
shard writes with fsync) playing LLM seller and buyer over HTTP. The raw side replays the exact
request bodies the harness sent, with a bare ``httpx.AsyncClient``, and does nothing with the
replies but decode them. Prints turns per second of each and their ratio (target: >= 0.8).

    python benchmarks/harness.py [--seeds 16] [--concurrency 64] [--latency 0.0] [--repeats 3]
    python benchmarks/harness.py --small        # CI: one seed per domain, concurrency 8, one run per side

Runs alternate (harness, raw, harness, raw, ...) so that load from other processes on the machine
hits both sides alike; the ratio printed is that of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from negotiation.agents._llm_transport import HttpTransport  # noqa: E402
from negotiation.agents._llm_vllm import free_port  # noqa: E402
from negotiation.evaluation import CellSpec, ResultsStore, env_config, run_cell  # noqa: E402
from negotiation.evaluation._setup import agent_factory  # noqa: E402
from negotiation.agents._llm_retry import RetryPolicy  # noqa: E402
from negotiation.study import load_study


def start_server(port: int, latency: float) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "negotiation.cli", "serve-standin", "--port", str(port),
           "--latency", str(latency), "--study", "demo"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("stand-in server did not start")


async def harness_run(api_base: str, seeds: int, concurrency: int, capture: list | None) -> tuple[int, float]:
    protocol = load_study("demo").protocol
    cell = CellSpec(study="demo", arm="bench", seller=f"litellm:openai/boulware?api_base={api_base}",
                    buyers={"tft": f"litellm:openai/titfortat?api_base={api_base}"},
                    domains=tuple(protocol.domains.evaluated), seeds=tuple(range(5_000_000, 5_000_000 + seeds)),
                    dirichlet_alpha=protocol.environment.dirichlet_alpha)
    factory = agent_factory(protocol, retry=RetryPolicy(), max_concurrency=concurrency)
    if capture is not None:
        original = HttpTransport.complete

        async def recording(self, messages, params, extra_body):  # type: ignore[no-untyped-def]
            capture.append({"model": self.model, "messages": messages, **params, **extra_body})
            return await original(self, messages, params, extra_body)

        HttpTransport.complete = recording  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = ResultsStore(tmp)
            start = time.perf_counter()
            await run_cell(cell, store, env_config(protocol), factory, concurrency=concurrency)
            elapsed = time.perf_counter() - start
            turns = len(store.frames()[1])
    finally:
        if capture is not None:
            HttpTransport.complete = original  # type: ignore[method-assign]
    return turns, elapsed


async def raw_run(api_base: str, bodies: list[dict], concurrency: int) -> tuple[int, float]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        queue = list(reversed(bodies))

        async def worker() -> None:
            while queue:
                body = queue.pop()
                response = await client.post(f"{api_base}/chat/completions", json=body)
                json.loads(response.content)["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(bodies), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=16, help="seeds per domain (nine domains)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.0, help="stand-in seconds per reply")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each side")
    parser.add_argument("--small", action="store_true", help="CI: --seeds 1 --concurrency 8 --repeats 1")
    args = parser.parse_args()
    if args.small:
        args.seeds, args.concurrency, args.repeats = 1, 8, 1
    port = free_port()
    server = start_server(port, args.latency)
    api_base = f"http://127.0.0.1:{port}/v1"
    harness, raw = [], []
    try:
        bodies: list[dict] = []
        asyncio.run(harness_run(api_base, 2, args.concurrency, None))  # warm-up: imports, connections
        asyncio.run(harness_run(api_base, args.seeds, args.concurrency, bodies))  # capture the requests
        for _ in range(args.repeats):
            turns, seconds = asyncio.run(harness_run(api_base, args.seeds, args.concurrency, None))
            harness.append(turns / seconds)
            requests, seconds = asyncio.run(raw_run(api_base, bodies, args.concurrency))
            raw.append(requests / seconds)
    finally:
        server.terminate()
        server.wait(10)
    h, r = statistics.median(harness), statistics.median(raw)
    print(f"concurrency {args.concurrency}, stand-in latency {args.latency} s, {len(bodies)} turns per run "
          f"({args.seeds} seeds x 9 domains), {args.repeats} alternating runs per side")
    print(f"harness   : {h:8.1f} turns/s  (runs: {', '.join(f'{x:.1f}' for x in harness)})")
    print(f"raw httpx : {r:8.1f} turns/s  (runs: {', '.join(f'{x:.1f}' for x in raw)})")
    print(f"ratio     : {h / r:.2f}x (target >= 0.80)")


if __name__ == "__main__":
    main()
