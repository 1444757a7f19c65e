"""``hf:`` agents on a real tiny checkpoint: the model's chat template, the protocol's sampling with
per-turn seeds, batched across the episodes of a cell, and what the backend honoured recorded."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from tests.agents.car_prefs import SCENARIO

from negotiation.agents import parse_spec
from negotiation.agents._llm_hf import make_hf_agent
from negotiation.agents._llm_settings import LLMSettings
from negotiation.agents._llm_sampling import Decoding
from negotiation.env import EnvConfig, Negotiation
from negotiation.errors import ConfigError

ENV = EnvConfig(max_rounds=4, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=3, accept_applies_terms=False)
SETTINGS = LLMSettings(sampling=Decoding(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=16),
                       sampling_role="self_served_seller", converge_from_turn=16)


@pytest.fixture(scope="module")
def checkpoint(tiny_lm):
    return tiny_lm


def test_reply_renders_the_chat_template_and_counts_tokens(checkpoint):
    from transformers import AutoTokenizer

    from negotiation.env import render_messages

    agent = make_hf_agent(parse_spec(f"hf:{checkpoint}"), "seller", SETTINGS)
    view = Negotiation(SCENARIO, ENV).view()
    reply = agent.respond(view)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    request = agent.request(view)
    messages = render_messages(view, "evaluation", converge_from_turn=16)
    thinking = "enable_thinking" in tokenizer.chat_template
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                             **({"enable_thinking": False} if thinking else {}))
    assert list(request.prompt_ids) == tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert (request.max_new_tokens, request.temperature, request.top_p, request.top_k) == (16, 1.0, 0.95, 64)
    assert reply.tokens_in == len(request.prompt_ids) and 1 <= reply.tokens_out <= 16
    assert agent.respond(view).text == reply.text  # the turn's seed fixes the draw
    record = agent.record
    assert record.sent == {"temperature": 1.0, "top_p": 0.95, "top_k": 64, "thinking": False, "max_tokens": 16,
                           "seed": "per-turn"}
    assert ("thinking" in record.not_sent) is not thinking  # recorded when the template has no switch
    assert agent.calls_ok == 2


def test_a_cell_batches_its_episodes_and_plays_them_as_one_at_a_time(checkpoint, tmp_path):
    from negotiation.evaluation import CellSpec, ResultsStore, run_cell

    cell = CellSpec(study="t", arm="hf", seller=f"hf:{checkpoint}", buyers={"tft": "scripted:titfortat"},
                    domains=("used_car", "job_offer"), seeds=(1, 2), dirichlet_alpha=0.3)
    agents: dict = {}

    def factory(spec, role):
        from negotiation.agents import make_agent

        agents[role] = make_hf_agent(parse_spec(spec), role, SETTINGS) if spec.startswith("hf:") else \
            make_agent(spec, role)
        return agents[role]

    asyncio.run(run_cell(cell, ResultsStore(tmp_path / "batched"), ENV, factory, concurrency=4))
    batched_sizes = agents["seller"].batch_sizes
    asyncio.run(run_cell(cell, ResultsStore(tmp_path / "single"), ENV, factory, concurrency=1))
    assert max(batched_sizes) > 1 and max(agents["seller"].batch_sizes) == 1
    batched, single = (ResultsStore(tmp_path / name).compact()[1] for name in ("batched", "single"))
    keys = ["domain", "seed", "turn"]
    batched, single = batched.sort_values(keys).reset_index(drop=True), single.sort_values(keys).reset_index(drop=True)
    assert len(batched) > 0
    pd.testing.assert_series_equal(batched["raw"], single["raw"])


def test_a_prompt_beyond_the_context_is_one_error_row(checkpoint):
    from negotiation.agents._llm_retry import AgentCallError

    agent = make_hf_agent(parse_spec(f"hf:{checkpoint}"), "seller", SETTINGS)
    agent._load()[1].context = 64
    with pytest.raises(AgentCallError, match="ContextWindowExceededError.*exceed the model's context of 64"):
        agent.respond(Negotiation(SCENARIO, ENV).view())


def test_bad_options_and_a_missing_checkpoint_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="dtype"):
        make_hf_agent(parse_spec("hf:/x?dtype=float8"), "seller", SETTINGS)
    with pytest.raises(ConfigError, match="max_batch"):
        make_hf_agent(parse_spec("hf:/x?max_batch=0"), "seller", SETTINGS)
    no_cap = SETTINGS.model_copy(update={"sampling": Decoding(temperature=1.0)})
    with pytest.raises(ConfigError, match="max_tokens"):
        make_hf_agent(parse_spec("hf:/x"), "seller", no_cap)

