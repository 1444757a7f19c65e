"""Scenario lists with the 80/20 buyer mixture, and DatumSpec-shaped datums."""

from __future__ import annotations

from collections import Counter

import pytest

from negotiation.errors import ConfigError
from negotiation.study import load_study
from negotiation.training import training_items
from negotiation.training.nemo import (
    EpisodeState, build_datums, derive_turn_tags, env_settings, load_prompt_builder, template_kwargs,
    training_scenarios, validation_scenarios,
)
from tests.training.nemo.chat_fixtures import e_series

PAPER = load_study("paper").protocol
GPT_MINI, GPT_FULL = "litellm:openai/gpt-5.4-mini", "litellm:openai/gpt-5.5"


def test_scenarios_are_the_demo_trainers_items_as_episode_states():
    states = training_scenarios(PAPER, offset=0, count=16, seed=0)
    assert len(states) == 16 and all(s.turns == () and s.seller_steps == 0 for s in states)
    assert all(s.sample_seed == s.seed and 0 <= s.seed < 4500 for s in states)  # top tenth is validation
    assert {s.domain for s in states} <= set(PAPER.domains.training)
    assert [(s.domain, s.seed, s.buyer) for s in states[3:5]] == \
        [(i.domain, i.seed, i.buyer) for i in training_items_of(3, 2)]


def training_items_of(start: int, count: int):
    from negotiation.training import training_data

    return training_items(training_data(PAPER), 0, start, count)


def test_the_combined_run_mixes_buyers_80_20_and_continuations_pick_up_where_parents_stop():
    full = training_scenarios(PAPER, offset=0, count=104 * 16, seed=0)
    counts = Counter(s.buyer for s in full)
    # 1664 draws at 0.8: mean 1331.2, standard deviation 16.3; four deviations either side.
    assert set(counts) == {GPT_MINI, GPT_FULL} and abs(counts[GPT_MINI] - 1331.2) < 4 * 16.3
    assert len({(s.domain, s.seed) for s in full}) == 1664  # no scenario repeats within a combined run
    assert training_scenarios(PAPER, offset=64 * 16, count=40 * 16, seed=0) == full[1024:]
    assert training_scenarios(PAPER, offset=0, count=16, seed=1) != full[:16]


def test_validation_scenarios_are_fixed_and_disjoint_from_training():
    val = validation_scenarios(PAPER)
    assert len(val) == 64 and all(4500 <= s.seed < 5000 for s in val)
    assert val == validation_scenarios(PAPER)


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
    assert message["content"] == (f"<bos><|turn>system\nYou sell in {states[0].domain}.<turn|>\n"
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


def test_the_default_prompt_builder_renders_and_round_trips_on_both_templates():
    from negotiation.training.nemo import check_round_trip
    from negotiation.training.nemo._config import DEFAULT_PROMPT_BUILDER
    from negotiation.training.nemo._state import replay
    from negotiation.lm import DEFAULT_HISTORY
    from tests.training.nemo.chat_fixtures import conventional

    builder = load_prompt_builder(DEFAULT_PROMPT_BUILDER)
    state = training_scenarios(PAPER, offset=0, count=1, seed=0)[0]
    for tokenizer in (e_series(), conventional()):
        tags = derive_turn_tags(tokenizer, template_kwargs(False))
        settings = env_settings("paper", tags=tags)
        opening = [dict(m) for m in builder(replay(state, settings).view())]
        assert [m["role"] for m in opening] == ["system", "user"]
        check_round_trip(tokenizer, tags, opening + list(DEFAULT_HISTORY[1:]))  # the launcher's pre-flight
        datum = build_datums([state], tokenizer=tokenizer, prompt_builder=builder, settings=settings,
                             max_prompt_tokens=2048)[0]
        assert datum["message_log"][0]["content"].endswith(tags.generation_prompt)
