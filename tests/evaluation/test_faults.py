"""Acceptance: with 20 % injected transient faults a cell completes with zero error rows and plays
exactly the episodes of a fault-free run (the stand-in's replies depend on prompt and seed only)."""

from __future__ import annotations

import asyncio

import pandas as pd
from tests.evaluation.helpers import DEMO, ENV, FAST_RETRY, settings, standin

from negotiation.agents import parse_spec
from negotiation.agents._llm import make_litellm_agent
from negotiation.evaluation import CellSpec, ResultsStore, run_cell

TIMING = ["latency_s", "retries"]  # wall-clock and retry counts are the only columns faults may change


def play(tmp_path, name, **faults):
    with standin(**faults) as server:
        cell = CellSpec(study="demo", arm="llm", seller=f"litellm:openai/boulware?api_base={server.api_base}",
                        buyers={"tft": f"litellm:openai/titfortat?api_base={server.api_base}"},
                        domains=("used_car", "job_offer", "media_rights"), seeds=(5_000_000, 5_000_001, 5_000_002),
                        dirichlet_alpha=DEMO.environment.dirichlet_alpha)

        # Each read may take the timeout and the whole request twice that, also while the loop plays
        # other episodes: 0.5 s keeps honest replies on 2 busy cores inside it; injected hangs are 1 s.
        def factory(spec, role):
            return make_litellm_agent(parse_spec(spec), role, settings(FAST_RETRY.model_copy(update={"timeout_s": 0.5})))

        store = ResultsStore(tmp_path / name)
        progress = asyncio.run(run_cell(cell, store, ENV, factory, concurrency=9))
        counts = dict(server.handler.counts)
    episodes, turns = store.frames()
    # The api_base (a random port) is part of the specs; compare without it.
    for frame in (episodes, turns):
        for column in ("seller", "buyer_spec"):
            if column in frame:
                frame[column] = frame[column].str.replace(server.api_base, "<base>", regex=False)
    return progress, counts, episodes, turns


def test_faulty_run_equals_fault_free_run(tmp_path):
    _, clean_counts, clean_eps, clean_turns = play(tmp_path, "clean")
    progress, counts, eps, turns = play(tmp_path, "faulty", error_rate=0.2, retry_after_s=0.01, hang_s=1.0, seed=11)
    assert progress.errors == 0 and (eps["outcome"] != "error").all()
    injected = {k: counts[k] for k in ("429", "500", "timeout", "drop", "malformed")}
    assert all(n > 0 for n in injected.values()), injected
    assert 0.1 < sum(injected.values()) / counts["requests"] < 0.3
    # every injected fault is retried; an honest reply slower than the timeout on a busy machine (CI
    # runs two parts at a time) may add a retry in either run, never a changed episode
    assert progress.retries == eps["retries"].sum() >= sum(injected.values())
    pd.testing.assert_frame_equal(eps.drop(columns=TIMING), clean_eps.drop(columns=TIMING))
    pd.testing.assert_frame_equal(turns, clean_turns)
    assert clean_counts["requests"] > 0 and not any(clean_counts.get(k, 0) for k in injected) and len(eps) == 9
