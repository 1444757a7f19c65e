"""The smallest size end to end: tokenizer, warm start, then a full episode it writes itself."""

from __future__ import annotations

import json

import pytest

from negotiation.agents import make_agent
from negotiation.env import load_domain, make_scenario, run_episode
from negotiation.ladder import WARM_START_RECORD, write_base, write_tokenizer
from negotiation.protocol import env_config
from tests.conftest import tiny_lm_protocol


@pytest.mark.slow
def test_smallest_base_is_built_warm_started_and_plays_an_episode(tmp_path):
    protocol = tiny_lm_protocol()
    record = write_tokenizer(protocol, tmp_path / "tokenizer")
    assert record["learned_tokens"] <= protocol.tokenizer.vocab_size
    write_base(protocol, "lm_xs", tmp_path / "tokenizer", tmp_path / "lm_xs", log=lambda _: None)
    warm = json.loads((tmp_path / "lm_xs" / WARM_START_RECORD).read_text())
    assert warm["steps"] == protocol.warm_start.steps and warm["final_val_loss"] < warm["val_loss"][0][1]
    seller = make_agent(f"hf:{tmp_path / 'lm_xs'}?device=cpu&study=lm&max_tokens=24", "seller")
    scenario = make_scenario(load_domain("used_car"), 5000053, protocol.environment.dirichlet_alpha)
    episode = run_episode(scenario, seller, make_agent("scripted:titfortat", "buyer"), env_config(protocol))
    seller_turns = [t for t in episode.turns if t.role == "seller"]
    assert seller_turns and all(t.reply.tokens_out > 0 for t in seller_turns)
    # A two-step warm start cannot write the format yet: its turns are real, counted bad parses.
    assert episode.n_bad("seller") == sum(not t.ok for t in seller_turns)
