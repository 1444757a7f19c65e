"""The ``parse`` reward kind (the learning ladder's format task): 1 when the seller's first turn
parses to an action, 0 for a malformed one, whether the environment or the driver ends the
episode; the ``eq1`` kind keeps the front-loaded floor."""

from __future__ import annotations

import numpy as np
import transformers

from negotiation.agents import make_agent, turn_seed
from negotiation.training.lm import play_token_episodes
from negotiation.training.nemo import (
    NegotiationStepLogic, derive_turn_tags, protocol_env_settings, replay, stop_token_ids, template_kwargs,
    training_scenarios,
)
from tests.training.lm.tiny_lm import CANNED_TURNS, tiny_protocol, write_tiny_checkpoint

MALFORMED = CANNED_TURNS[2]


def _pick(seed: int, turns: tuple[str, ...]) -> str:
    return turns[int(np.random.default_rng(seed).integers(len(turns)))]


def _play(folder, reward: str, seeds: list[int], rollout_turns: int):
    """Episodes of one scenario whose seller turns are canned: a scripted seller's (parsable)
    opening, a malformed turn or an ACCEPT with nothing to accept (a bad turn), by request seed."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    protocol = tiny_protocol()
    tags = derive_turn_tags(tok, template_kwargs(False))
    settings = protocol_env_settings(protocol, tags).model_copy(update={"reward": reward})
    stops = stop_token_ids(tags, tok.eos_token_id)
    state = training_scenarios(protocol, offset=0, count=1, seed=0)[0]
    opening = make_agent("scripted:boulware", "seller").respond(replay(state, settings).view()).text
    turns = (opening, MALFORMED, CANNED_TURNS[0])

    def generate(prompts, request_seeds):
        return [list(tok.encode(_pick(s, turns), add_special_tokens=False)) + [stops[0]] for s in request_seeds]

    with NegotiationStepLogic(settings) as logic:
        ep = play_token_episodes([state] * len(seeds), seeds, tokenizer=tok, generate=generate, settings=settings,
                                 prompt_tokens=2048, context_tokens=8192, new_tokens=64,
                                 rollout_turns=rollout_turns, stop_ids=stops, logic=logic)
    return ep, [_pick(turn_seed(s, 0, "seller"), turns) for s in seeds], opening


def test_parse_reward_is_one_for_a_parsable_first_turn_and_zero_for_a_malformed_one(tmp_path):
    folder = write_tiny_checkpoint(tmp_path / "tiny")
    seeds = list(range(24))
    for rollout_turns in (1, 4):  # cut by the driver after one turn, or played on: the same return
        ep, first, opening = _play(folder, "parse", seeds, rollout_turns)
        expected = [1.0 if text == opening else 0.0 for text in first]
        assert 0 < sum(expected) < len(expected)  # both kinds are drawn
        assert ep.returns.tolist() == expected


def test_eq1_reward_still_pays_the_floor(tmp_path):
    folder = write_tiny_checkpoint(tmp_path / "tiny")
    ep, first, opening = _play(folder, "eq1", list(range(12)), 1)
    assert ep.truncated.any() and np.allclose(ep.returns[ep.truncated], -0.3)  # the front-loaded floor
    assert set(ep.returns.tolist()) == {-0.3}  # one turn never ends the game: every episode keeps -λ
