"""Acceptance: SIGKILL at random points, five times, then a rerun: every episode exactly once and the
same tables as an uninterrupted run. The CLI runs as a subprocess, as a user would run it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from tests.evaluation.helpers import standin
from typer.testing import CliRunner

from negotiation.cli._evaluate_cmds import evaluate

REPO = Path(__file__).resolve().parents[2]
DOMAINS = "used_car,job_offer,media_rights"
SEEDS = "5000000:5000008"


def command(out: Path, seller: str, buyers: list[str], *extra: str, domains: str = DOMAINS,
            seeds: str = SEEDS) -> list[str]:
    cmd = [sys.executable, "-m", "negotiation.cli", "evaluate", "--study", "demo", "--seller", seller,
           "--domains", domains, "--seeds", seeds, "--out", str(out), "--no-pilot", "--concurrency", "6",
           "--backoff", "0.005", "--backoff-max", "0.02", *extra]
    for buyer in buyers:
        cmd += ["--buyer", buyer]
    return cmd


def uninterrupted(cmd: list[str]) -> None:
    """The reference run, in-process through the same CLI command (saves a process start)."""
    app = typer.Typer()
    app.command("evaluate")(evaluate)
    app.command("other")(lambda: None)  # two commands, so the command name is parsed as in ``nego``
    result = CliRunner().invoke(app, cmd[3:])
    assert result.exit_code == 0, result.output


def environ() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def shard_count(out: Path) -> int:
    return len(list((out / "shards").glob("*/*.json"))) if (out / "shards").is_dir() else 0


def kill_at_random_points(cmd: list[str], out: Path, total: int, rng: np.random.Generator, times: int = 5) -> int:
    """Start the run and SIGKILL it after a random number of stored episodes; returns kills that hit a live run."""
    hits = 0
    for _ in range(times):
        target = shard_count(out) + int(rng.integers(0, max(1, total // times)))
        proc = subprocess.Popen(cmd, env=environ(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None and shard_count(out) < target:
            time.sleep(0.002)
        time.sleep(float(rng.uniform(0, 0.01)))
        hits += proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return hits


def assert_exactly_once_and_equal(out: Path, reference: Path, total: int) -> None:
    episodes = pd.read_parquet(out / "episodes.parquet")
    assert len(episodes) == total
    assert not episodes.duplicated(["arm", "domain", "seed", "buyer"]).any()
    assert shard_count(out) == total  # one attempt per key: nothing was played twice
    ref_eps = pd.read_parquet(reference / "episodes.parquet")
    pd.testing.assert_frame_equal(episodes.drop(columns=["latency_s"]), ref_eps.drop(columns=["latency_s"]))
    pd.testing.assert_frame_equal(pd.read_parquet(out / "turns.parquet"), pd.read_parquet(reference / "turns.parquet"))


def scripted_kill_test(tmp_path: Path, kills: int, seed: int) -> None:
    buyers = ["tft=scripted:titfortat", "con=scripted:conceder"]
    total = 3 * 8 * 2
    reference = tmp_path / "reference"
    uninterrupted(command(reference, "scripted:boulware", buyers))
    out = tmp_path / "killed"
    hits = kill_at_random_points(command(out, "scripted:boulware", buyers), out, total, np.random.default_rng(seed),
                                 times=kills)
    assert hits >= kills - 1  # kills landed in a live run (a kill after it finished proves nothing)
    assert shard_count(out) < total
    done = subprocess.run(command(out, "scripted:boulware", buyers), env=environ(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert_exactly_once_and_equal(out, reference, total)


def test_sigkill_twice_then_resume_gives_the_uninterrupted_tables(tmp_path):
    scripted_kill_test(tmp_path, kills=2, seed=5)


@pytest.mark.slow
def test_sigkill_five_times_then_resume_gives_the_uninterrupted_tables(tmp_path):
    scripted_kill_test(tmp_path, kills=5, seed=6)


@pytest.mark.slow
def test_sigkill_during_llm_calls_with_faults_then_resume(tmp_path):
    with standin(error_rate=0.2, retry_after_s=0.01, hang_s=1.0, latency_s=0.01, seed=3) as server:
        seller = f"litellm:openai/boulware?api_base={server.api_base}&timeout=0.3"
        buyers = [f"tft=litellm:openai/titfortat?api_base={server.api_base}&timeout=0.3"]
        total = 2 * 5
        small = {"domains": "used_car,job_offer", "seeds": "5000000:5000005"}
        reference = tmp_path / "reference"
        uninterrupted(command(reference, seller, buyers, **small))
        out = tmp_path / "killed"
        hits = kill_at_random_points(command(out, seller, buyers, **small), out, total, np.random.default_rng(9))
        assert hits >= 4
        done = subprocess.run(command(out, seller, buyers, **small), env=environ(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    timing = ["latency_s", "retries"]
    episodes = pd.read_parquet(out / "episodes.parquet").drop(columns=timing)
    ref_eps = pd.read_parquet(reference / "episodes.parquet").drop(columns=timing)
    assert len(episodes) == total and not episodes.duplicated(["arm", "domain", "seed", "buyer"]).any()
    assert shard_count(out) == total
    pd.testing.assert_frame_equal(episodes, ref_eps)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "turns.parquet"), pd.read_parquet(reference / "turns.parquet"))
