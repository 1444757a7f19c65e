"""The ``ray`` execution backend on a local two-CPU Ray instance: the demo's tables byte for byte,
a SIGKILLed worker recovered exactly once, a resumed store, a served seller holding its (fake)
GPUs, and one rate limiter for the whole cluster."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.evaluation.helpers import DEMO, FAST_RETRY, standin

from negotiation.agents import RateLimit, configure_rate_limits
from negotiation.agents._llm_vllm import ServeSettings
from negotiation.evaluation import (ExecutionBackend, RunOptions, agent_factory, build_cell, evaluate_arm,
                                    evaluate_cell, start_ray, stop_ray)
from negotiation.study import load_study, protocol_hash

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

GPUS = 4
"""Fake GPUs the local Ray instance declares (none exist: Ray schedules them as a resource)."""
ARM = "ref_boulware"


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests
    start_ray(num_cpus=2, num_gpus=GPUS)
    yield
    stop_ray()


def hashes(out: Path) -> dict[str, str]:
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in ("episodes.parquet", "turns.parquet")}


def shard_names(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "shards").rglob("*.json"))


def demo_arm(results: Path, backend: ExecutionBackend, make_agent: Any = None):
    """The demo's evaluate stage for one arm (as ``evaluate@ref_boulware`` runs it)."""
    study = load_study("demo")
    options = RunOptions(pilot=False, retry_errors=True, backend=backend)
    if make_agent is None:
        return asyncio.run(evaluate_arm(study, ARM, "scripted:boulware", results, options=options))
    cell = build_cell(study.protocol, arm=ARM, seller="scripted:boulware")
    return asyncio.run(evaluate_cell(cell, results / "evaluate" / ARM, study.protocol, protocol_hash=protocol_hash("demo"),
                                     options=options, make_agent=make_agent))


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("local")
    demo_arm(results, ExecutionBackend())
    return results / "evaluate" / ARM


def test_ray_tables_equal_the_local_backend_and_a_rerun_plays_only_what_is_missing(local_run, tmp_path):
    result = demo_arm(tmp_path, ExecutionBackend(kind="ray", workers=2, episodes_per_task=8))
    out = tmp_path / "evaluate" / ARM
    assert result.progress.done == 144 and hashes(out) == hashes(local_run)
    assert shard_names(out) == shard_names(local_run)  # one shard per key, attempt 1

    resumed = tmp_path / "resumed"
    shutil.copytree(out / "shards", resumed / "evaluate" / ARM / "shards")
    shutil.copy(out / "fingerprint.json", resumed / "evaluate" / ARM)
    for shard in sorted((resumed / "evaluate" / ARM / "shards").rglob("*.json"))[::2]:
        shard.unlink()  # a run that died halfway
    again = demo_arm(resumed, ExecutionBackend(kind="ray", workers=2))
    assert (again.progress.skipped, again.progress.done) == (72, 72)
    assert hashes(resumed / "evaluate" / ARM) == hashes(local_run)


class KillingSeller:
    """Delegates to a scripted seller; in a Ray worker, SIGKILLs its own process at its Nth move
    (once per marker file), as the OOM killer or a lost node would."""

    def __init__(self, inner: Any, marker: Path, driver_pid: int, after: int):
        self.inner, self.marker, self.driver_pid, self.after, self.moves = inner, marker, driver_pid, after, 0
        self.spec = inner.spec

    def respond(self, view: Any) -> Any:
        self.moves += 1
        if os.getpid() != self.driver_pid and self.moves == self.after and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return self.inner.respond(view)


def test_a_worker_killed_mid_run_is_replaced_with_no_duplicates_and_no_gaps(local_run, tmp_path):
    factory = agent_factory(DEMO, retry=FAST_RETRY, max_concurrency=4)
    marker, driver = tmp_path / "killed", os.getpid()

    def make_agent(spec: str, role: str) -> Any:
        agent = factory(spec, role)
        return KillingSeller(agent, marker, driver, after=150) if role == "seller" else agent

    result = demo_arm(tmp_path, ExecutionBackend(kind="ray", workers=2, episodes_per_task=24), make_agent)
    out = tmp_path / "evaluate" / ARM
    assert marker.exists() and int(marker.read_text()) != driver  # a worker really died mid-task
    assert result.progress.done == 144 and not result.episodes.duplicated(["domain", "seed", "buyer"]).any()
    assert shard_names(out) == shard_names(local_run) and hashes(out) == hashes(local_run)


FAKE_VLLM = """#!{python}
# Stands in for `vllm serve`: serves the scripted personas on the --host/--port it is given.
import sys
from negotiation.cli import main
args = sys.argv[1:]
sys.argv = ["nego", "serve-standin", "--host", args[args.index("--host") + 1], "--port", args[args.index("--port") + 1]]
main()
"""


def test_a_served_seller_actor_reserves_the_protocols_tensor_parallel_gpus_and_frees_them(tmp_path):
    paper = load_study("paper").protocol
    size = next(name for name, entry in paper.sizes.items()
                if getattr(entry, "eval_accelerators", 0) and entry.eval_accelerators > 1)
    serve = ServeSettings.from_protocol(paper, size)
    exe = tmp_path / "fake-vllm"
    exe.write_text(FAKE_VLLM.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    seller = f"vllm:{tmp_path}/boulware?executable={exe}&startup_timeout=60"
    cell = build_cell(DEMO, arm="served", seller=seller, buyers={"tft": "scripted:titfortat"},
                      domains=("used_car", "job_offer"), seeds=(5_000_000, 5_000_001))
    held: list[float] = []

    def run(out: Path, backend: ExecutionBackend):
        watch = (lambda phase, p: held.append(ray.available_resources().get("GPU", 0.0))) \
            if backend.kind == "ray" else None
        return asyncio.run(evaluate_cell(cell, out, DEMO, protocol_hash="p", serve=serve, on_progress=watch,
                                         options=RunOptions(pilot=False, retry=FAST_RETRY, backend=backend)))

    local = run(tmp_path / "local", ExecutionBackend())
    remote = run(tmp_path / "ray", ExecutionBackend(kind="ray", workers=2))
    assert held and set(held) == {GPUS - serve.tensor_parallel_size}  # reserved while the cell ran
    deadline = time.monotonic() + 30
    while ray.available_resources().get("GPU", 0.0) < GPUS and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0.0) == GPUS  # and given back
    timing = ["latency_s"]
    assert len(remote.episodes) == 4 and (remote.episodes["seller"] == seller).all()
    pd.testing.assert_frame_equal(remote.episodes.drop(columns=timing), local.episodes.drop(columns=timing))
    pd.testing.assert_frame_equal(remote.turns.drop(columns=[c for c in remote.turns if "latency" in c]),
                                  local.turns.drop(columns=[c for c in local.turns if "latency" in c]))


def test_buyers_api_calls_go_through_one_limiter_for_the_whole_cluster(tmp_path):
    from negotiation.evaluation._ray_actors import LIMITER_NAME

    with standin() as server:
        buyer = f"litellm:openai/titfortat?api_base={server.api_base}"
        cell = build_cell(DEMO, arm="limited", seller="scripted:boulware", buyers={"tft": buyer},
                          domains=("used_car", "job_offer"), seeds=(5_000_000, 5_000_001, 5_000_002))
        configure_rate_limits({server.api_base: RateLimit(requests_per_minute=6000)})
        try:
            result = asyncio.run(evaluate_cell(cell, tmp_path, DEMO, protocol_hash="p", options=RunOptions(
                pilot=False, retry=FAST_RETRY, backend=ExecutionBackend(kind="ray", workers=2, episodes_per_task=2))))
        finally:
            configure_rate_limits({})
    limiter = ray.get_actor(LIMITER_NAME)
    buyer_turns = int((result.turns["role"] == "buyer").sum())
    assert result.ok and buyer_turns > 0
    assert ray.get(limiter.requests.remote())[server.api_base] == buyer_turns + int(result.episodes["retries"].sum())
    ray.kill(limiter)
