"""A killed `dvc repro` followed by `dvc repro` pays for no stored episode twice: the evaluate
stage's results store persists across reruns and resumes (requests counted at the stand-in)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from tests.pipeline.dvc_checkout import checkout_copy, dvc, stage_env

from negotiation.evaluation import Faults, ResultsStore, StandinConfig, StandinServer
from negotiation.evaluation._store import key_digest
from negotiation.study import load_study

pytestmark = pytest.mark.slow
ARM = "ref_boulware"
STAGE = f"pipelines/demo/arms/{ARM}/dvc.yaml:evaluate"  # the arm's evaluate, in its own folder's file


def _llm_buyer(copy, api_base: str) -> str:
    """Make the demo's tit-for-tat evaluation buyer an LLM agent served by the stand-in; re-freeze."""
    path = copy / "protocol/demo/protocol.yaml"
    text = path.read_text()
    spec = f"litellm:openai/titfortat?api_base={api_base}&transport=http"
    path.write_text(text.replace('titfortat: {spec: "scripted:titfortat"', f'titfortat: {{spec: "{spec}"'))
    assert spec in path.read_text()
    subprocess.run([sys.executable, "-m", "negotiation.cli", "protocol", "freeze", "demo"], cwd=copy, check=True,
                   env=stage_env(copy), capture_output=True)
    return "titfortat"


def _kill_when_stored(copy, n: int, timeout: float = 300) -> None:
    shards = copy / f"outputs/demo/evaluate/{ARM}/shards"
    proc = subprocess.Popen([sys.executable, "-m", "dvc", "repro", STAGE], cwd=copy,
                            env=stage_env(copy, NEGO_EVAL_CONCURRENCY="4"), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while len(list(shards.glob("*/*.ok.json"))) < n:
        assert proc.poll() is None, "dvc repro ended before it could be killed"
        assert time.monotonic() < deadline, "no episodes stored in time"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_killed_repro_then_repro_replays_no_stored_episode(tmp_path):
    copy = checkout_copy(tmp_path)
    out = copy / f"outputs/demo/evaluate/{ARM}"
    config = StandinConfig(max_turns=2 * load_study("demo").protocol.environment.max_rounds, faults=Faults(latency_s=0.02))
    with StandinServer(config) as server:
        label = _llm_buyer(copy, server.api_base)
        _kill_when_stored(copy, 40)
        stored = {digest for digest, found in ResultsStore(out).scan().items() if found.status == "ok"}
        before = server.handler.counts["requests"]
        second = dvc(["repro", STAGE], copy)
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        paid_again = server.handler.counts["requests"] - before
    episodes = pd.read_parquet(out / "episodes.parquet")
    assert len(episodes) == 144 and (episodes["outcome"] != "error").all()
    assert not (out / "superseded").exists()
    llm = episodes[episodes["buyer"] == label]
    unstored = [key_digest((ARM, d, int(s), label)) not in stored for d, s in zip(llm["domain"], llm["seed"])]
    assert 0 < sum(unstored) < len(llm), "the kill must fall between the first and the last LLM episode"
    # One request per buyer turn: the rerun paid exactly for the LLM episodes the killed run had not stored.
    assert paid_again == int(llm["n_turns"][unstored].sum() - llm["n_seller_turns"][unstored].sum())
