"""What the harness reads from the protocol, and the CLI's small parsers."""

from __future__ import annotations

import pytest
from tests.evaluation.helpers import DEMO

from negotiation.agents._llm import LLMAgent
from negotiation.agents._llm_retry import RetryPolicy
from negotiation.agents._scripted import ScriptedAgent
from negotiation.errors import ConfigError
from negotiation.evaluation import agent_factory, build_cell, env_config, parse_buyers, parse_domains, parse_seeds
from negotiation.study import load_study

PAPER = load_study("paper").protocol


def test_env_config_per_phase():
    evaluation, training = env_config(PAPER, "evaluation"), env_config(PAPER, "training")
    assert (evaluation.max_rounds, evaluation.no_deal_penalty, evaluation.g_fmt, evaluation.g_len) == (12, 0.3, 0.05, 0.05)
    assert evaluation.t_soft == 9.0 and evaluation.max_turns == 24
    assert (evaluation.accept_applies_terms, training.accept_applies_terms) == (False, True)
    assert (evaluation.phase, training.phase) == ("evaluation", "training")


def test_seeds_and_buyers():
    assert parse_seeds("5:8") == (5, 6, 7) and parse_seeds("4") == (4,)
    for bad in ("8:5", "a:b", "-1:3", "3:3"):
        with pytest.raises(ConfigError, match=f"--seeds:{bad}"):
            parse_seeds(bad)
    assert parse_buyers(["x=scripted:boulware", "scripted:titfortat?delta=0.5"]) == {
        "x": "scripted:boulware", "scripted:titfortat?delta=0.5": "scripted:titfortat?delta=0.5"}
    with pytest.raises(ConfigError, match="given twice"):
        parse_buyers(["x=scripted:boulware", "x=scripted:conceder"])
    with pytest.raises(ConfigError, match="unknown kind"):
        parse_buyers(["x=nope:thing"])


def test_cell_defaults_come_from_the_protocol():
    cell = build_cell(PAPER, arm="12b_base", seller="vllm:/ckpt")
    assert cell.domains == PAPER.domains.evaluated and len(cell.domains) == 9
    assert cell.seeds == tuple(range(5_000_000, 5_000_064))
    assert cell.buyers == {"claude_sonnet_5": "litellm:anthropic/claude-sonnet-5",
                           "gpt_5_6_terra": "litellm:openai/gpt-5.6-terra"}
    assert len(cell.keys()) == PAPER.evaluation.episodes_per_arm == 1152
    with pytest.raises(ConfigError, match="moon"):
        build_cell(PAPER, arm="a", seller="vllm:/c", domains=("moon",))


def test_agent_factory_gives_llm_kinds_the_protocols_settings():
    make = agent_factory(PAPER, retry=RetryPolicy(max_attempts=3), max_concurrency=7,
                         seller_sampling="reference_seller")
    seller = make("litellm:openai/m?api_base=http://127.0.0.1:9/v1", "seller")
    buyer = make("litellm:openai/m?api_base=http://127.0.0.1:9/v1", "buyer")
    assert isinstance(seller, LLMAgent) and seller.record.requested == {"temperature": 0.7}
    assert buyer.record.requested == {"temperature": 1.0}
    assert seller.settings.retry.max_attempts == 3 and seller.settings.max_concurrency == 7
    assert isinstance(make("scripted:boulware", "buyer"), ScriptedAgent)
    served = agent_factory(PAPER, retry=RetryPolicy(), max_concurrency=1)("vllm:/c?api_base=http://h:1/v1", "seller")
    assert served.record.requested == {"temperature": 1.0, "top_p": 0.95, "top_k": 64, "thinking": False,
                                       "max_tokens": 768}
    assert DEMO.environment.converge_from_turn == seller.settings.converge_from_turn


@pytest.mark.parametrize("text, reason", [("0:9999999999999", "at most"), (f"{2**64}:{2**64 + 2}", r"below 2\*\*63"),
                                          (f"{2**63 - 1}:{2**63 + 1}", r"below 2\*\*63")])
def test_seed_ranges_past_64_bits_or_too_long_are_refused(text, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_seeds(text)


def test_domains_are_deduplicated_in_order_and_an_empty_list_is_refused():
    assert parse_domains("used_car, job_offer,used_car,") == ("used_car", "job_offer")
    for empty in ("", " , ", ","):
        with pytest.raises(ConfigError, match="names no domain"):
            parse_domains(empty)


def test_a_cell_names_each_domain_seed_and_buyer_once_in_order():
    """However the cell is built (the API, a study file, the CLI), repeats are played once: two
    writers of one key shared a temporary file and failed every time."""
    cell = build_cell(DEMO, arm="a", seller="scripted:boulware", domains=("used_car", "job_offer", "used_car"),
                      seeds=(7, 3, 7, 3, 9), buyers=parse_buyers(["t=scripted:titfortat", "t=scripted:titfortat",
                                                                   "scripted:conceder", "scripted:conceder"]))
    assert cell.domains == ("used_car", "job_offer") and cell.seeds == (7, 3, 9)
    assert cell.buyers == {"t": "scripted:titfortat", "scripted:conceder": "scripted:conceder"}
    assert len(cell.keys()) == 2 * 3 * 2
