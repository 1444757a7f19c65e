"""Scenario lists with the 80/20 buyer mixture, and DatumSpec-shaped datums."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from negotiation.errors import ConfigError
from negotiation.protocol import load_study
from negotiation.training.nemo import (
    EpisodeState, build_datums, buyer_assignment, derive_turn_tags, env_settings, load_prompt_builder,
    template_kwargs, training_scenarios, validation_scenarios,
)
from tests.training.nemo.chat_fixtures import e_series

PAPER = load_study("paper").protocol
GPT_MINI, GPT_FULL = "litellm:openai/gpt-5.4-mini", "litellm:openai/gpt-5.5"


def test_buyer_assignment_counts_by_largest_remainder():
    rng = np.random.default_rng(0)
    assert Counter(buyer_assignment([0.8, 0.2], 10, rng)) == {0: 8, 1: 2}
    # 7 * 0.8 = 5.6 and 7 * 0.2 = 1.4: floors 5 and 1, the spare goes to the larger remainder.
    assert Counter(buyer_assignment([0.8, 0.2], 7, rng)) == {0: 6, 1: 1}
    # 0.5/0.5 of 3: equal remainders, the tie goes to the first-listed buyer.
    assert Counter(buyer_assignment([0.5, 0.5], 3, rng)) == {0: 2, 1: 1}


def test_buyer_assignment_is_a_function_of_the_generator():
    a = buyer_assignment([0.8, 0.2], 50, np.random.default_rng(7))
    assert a == buyer_assignment([0.8, 0.2], 50, np.random.default_rng(7))
    assert a != buyer_assignment([0.8, 0.2], 50, np.random.default_rng(8))


@given(weights=st.lists(st.integers(1, 20), min_size=1, max_size=5), count=st.integers(0, 300))
def test_buyer_assignment_counts_are_within_one_of_the_quota(weights, count):
    w = [x / sum(weights) for x in weights]
    counts = Counter(buyer_assignment(w, count, np.random.default_rng(1)))
    assert sum(counts.values()) == count
    assert all(abs(counts.get(k, 0) - w[k] * count) < 1 for k in range(len(w)))


def test_buyer_assignment_rejects_bad_weights():
    with pytest.raises(ValueError, match="summing to 1"):
        buyer_assignment([0.5, 0.4], 3, np.random.default_rng(0))


def test_training_scenarios_walk_the_seed_block_and_cycle_domains():
    states = training_scenarios(PAPER, offset=0, count=16, seed=0)
    assert [s.seed for s in states] == list(range(16))
    assert [s.sample_seed for s in states] == list(range(16))
    assert [s.domain for s in states[:8]] == list(PAPER.domains.training)
    assert Counter(s.domain for s in states) == {d: 2 for d in PAPER.domains.training}
    assert all(s.turns == () and s.seller_steps == 0 for s in states)


def test_the_combined_run_holds_the_exact_80_20_mixture_and_continuations_do_not_repeat():
    full = training_scenarios(PAPER, offset=0, count=104 * 16, seed=0)
    # 1664 * 0.8 = 1331.2 and 1664 * 0.2 = 332.8: largest remainder gives 1331 / 333.
    assert Counter(s.buyer for s in full) == {GPT_MINI: 1331, GPT_FULL: 333}
    continuation = training_scenarios(PAPER, offset=64 * 16, count=40 * 16, seed=0)
    assert continuation == full[1024:]
    assert continuation[0].seed == 1024 and continuation[0].domain == PAPER.domains.training[0]
    with pytest.raises(ValueError, match="outside the combined run"):
        training_scenarios(PAPER, offset=1024, count=641, seed=0)


def test_validation_scenarios_are_fixed_and_disjoint_from_training():
    val = validation_scenarios(PAPER, seed=0)
    assert [s.seed for s in val] == list(range(4999, 4983, -1))
    assert val == validation_scenarios(PAPER, seed=0)
    assert {s.seed for s in val}.isdisjoint(range(104 * 16))
    assert Counter(s.domain for s in val) == {d: 2 for d in PAPER.domains.training}


def test_a_seed_block_too_small_for_the_run_is_a_protocol_error():
    small = PAPER.model_copy(update={"seeds": PAPER.seeds.model_copy(
        update={"training": PAPER.seeds.training.model_copy(update={"stop": 1000})})})
    with pytest.raises(ConfigError, match="seeds.training: 1000 seeds cannot hold 1664 training and 16 validation"):
        training_scenarios(small, offset=0, count=16, seed=0)


def opening_prompt(view):
    return [{"role": "system", "content": f"You sell in {view.domain.name}."},
            {"role": "user", "content": f"Turn {view.turn}: open the negotiation."}]


def test_datums_have_the_datumspec_shape():
    tokenizer = e_series()
    settings = env_settings("paper", tags=derive_turn_tags(tokenizer, template_kwargs(False)))
    states = training_scenarios(PAPER, offset=16, count=2, seed=0)
    datums = build_datums(states, tokenizer=tokenizer, prompt_builder=opening_prompt, settings=settings,
                          max_prompt_tokens=2048, start_index=16)
    first = datums[0]
    assert set(first) == {"message_log", "length", "extra_env_info", "loss_multiplier", "idx", "task_name"}
    message = first["message_log"][0]
    assert message["content"] == ("<bos><|turn>system\nYou sell in acquisition.<turn|>\n"
                                  "<|turn>user\nTurn 1: open the negotiation.<turn|>\n<|turn>model\n")
    assert message["token_ids"].tolist() == tokenizer.encode(message["content"])
    assert first["length"] == len(message["token_ids"])
    assert EpisodeState.model_validate(first["extra_env_info"]) == states[0]
    assert (first["idx"], first["task_name"], first["loss_multiplier"]) == (16, "negotiation", 1.0)
    short = build_datums(states[:1], tokenizer=tokenizer, prompt_builder=opening_prompt, settings=settings,
                         max_prompt_tokens=5)
    assert (short[0]["loss_multiplier"], short[0]["length"]) == (0.0, 5)


def test_prompt_builders_load_by_path_or_fail_naming_it():
    from negotiation.env import make_scenario

    assert load_prompt_builder("negotiation.env:make_scenario") is make_scenario
    with pytest.raises(ConfigError, match="'negotiation.env:RECORD_VERSION' is not callable"):
        load_prompt_builder("negotiation.env:RECORD_VERSION")
    with pytest.raises(ConfigError, match="negotiation.prompt_builder: cannot load 'nowhere:fn'"):
        load_prompt_builder("nowhere:fn")
    with pytest.raises(ConfigError, match="cannot load 'negotiation.env:no_such'"):
        load_prompt_builder("negotiation.env:no_such")
