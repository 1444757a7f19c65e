"""A real vLLM server (the CPU build) serves the smallest lm base for a full evaluation cell.

Slow (a minute of server start-up, then a cell on two cores). Needs the vLLM environment that
``make vllm-venv`` builds (``.venv-vllm``) or ``NEGOTIATION_VLLM_PYTHON`` pointing at one. The
cell's tables equal the ``hf:`` seller's in structure (same keys, columns, parser, prompt token
counts), the per-turn seeds are honoured (a second serial pass over the same cell returns the
same text), and no process of the server outlives the run.

The replay is served one request at a time: vLLM's CPU kernels are not batch-invariant, so with
requests in flight together a token can change with the batch it was computed in (seen: one
token of 16 turns), while the seeds themselves replay exactly.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from negotiation.agents._llm_vllm import PYTHON_ENV, group_members
from negotiation.evaluation import RunOptions, agent_factory, build_cell, evaluate_cell
from negotiation.agents._llm_retry import RetryPolicy
from negotiation.study import load_study

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = os.environ.get(PYTHON_ENV) or str(REPO / ".venv-vllm" / "bin" / "python")
LM = load_study("lm").protocol
KEYS = ["domain", "seed", "buyer", "turn"]
CAP = LM.training.sequences.new_tokens_per_turn  # the protocol's per-turn token cap


def run(out: Path, seller: str, seen: dict, concurrency: int = 4) -> pd.DataFrame:
    base = agent_factory(LM, retry=RetryPolicy(max_attempts=2, timeout_s=300.0), max_concurrency=8,
                         seller_sampling="self_served_seller")

    def factory(spec: str, role: str):
        agent = base(spec, role)
        seen[role] = agent
        return agent

    cell = build_cell(LM, arm="base", seller=seller, buyers={"tft": "scripted:titfortat"},
                      domains=("job_offer", "media_rights"), seeds=(5_000_000, 5_000_001))
    result = asyncio.run(evaluate_cell(cell, out, LM, protocol_hash="h", make_agent=factory,
                                       options=RunOptions(pilot=False, concurrency=concurrency), seller_sampling="self_served_seller"))
    assert len(result.episodes) == 4
    return result


@pytest.mark.skipif(not Path(VLLM_PYTHON).exists(), reason=f"no vLLM environment ({VLLM_PYTHON}); `make vllm-venv`")
def test_vllm_serves_a_cell_like_hf_and_leaves_no_process(tiny_lm, tmp_path):
    seen: dict = {}
    spec = f"vllm:{tiny_lm}?python={VLLM_PYTHON}&max_model_len=4096&tp=1&kv_cache_memory_bytes={1 << 28}"
    vllm = run(tmp_path / "vllm", spec, seen, concurrency=1)
    server_pid = seen["seller"].server.pid
    assert group_members(server_pid) == []  # the server and its engine workers are gone
    hf = run(tmp_path / "hf", f"hf:{tiny_lm}", seen)

    assert list(vllm.episodes.columns) == list(hf.episodes.columns)
    assert list(vllm.turns.columns) == list(hf.turns.columns)
    assert sorted(vllm.episodes["seed"]) == sorted(hf.episodes["seed"])
    first = {name: r.turns[(r.turns["turn"] == 1)].sort_values(KEYS)["tokens_in"].tolist()
             for name, r in (("vllm", vllm), ("hf", hf))}
    assert first["vllm"] == first["hf"]  # one chat template, one tokenizer: the same prompts
    seller_turns = vllm.turns[vllm.turns["role"] == "seller"]
    assert (seller_turns["tokens_out"] > 0).all() and (seller_turns["tokens_out"] <= CAP).all()
    assert (~seller_turns["ok"]).sum() > 0  # an untrained model's turns are counted bad parses, not crashes
    detail = json.loads((tmp_path / "vllm" / "sampling_detail.json").read_text())["agents"][f"seller:{spec}"]
    assert detail["rejected"] == {} and detail["accepted"] == {"temperature": 1.0, "top_p": 0.95, "top_k": 64,
                                                               "max_tokens": CAP, "thinking": False, "seed": "per-turn"}

    again = run(tmp_path / "vllm-again", spec, {}, concurrency=1)
    pd.testing.assert_series_equal(again.turns.sort_values(KEYS)["raw"].reset_index(drop=True),
                                   vllm.turns.sort_values(KEYS)["raw"].reset_index(drop=True))
