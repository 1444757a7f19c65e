"""The environment step on plain message logs: observations, state, front-loaded rewards."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.agents import make_agent
from negotiation.env import Reply, episode_reward, render_messages, run_episode
from negotiation.errors import ConfigError
from negotiation.training.nemo import (
    EpisodeState, NegotiationStepLogic, derive_turn_tags, env_settings, return_metrics, template_kwargs,
)
from negotiation.training.nemo._state import replay
from tests.training.nemo.chat_fixtures import conventional, e_series

TAGS = derive_turn_tags(e_series(), template_kwargs(False))
SETTINGS = env_settings("paper", tags=TAGS)  # λ = 0.3, g_fmt = g_len = 0.05, T = 12, t_soft = 9
BUYER = "scripted:boulware?e=0.2"


def counter(**terms) -> str:
    body = [{"name": k, "value": v} for k, v in terms.items()]
    return "Here is my offer.\n" + json.dumps({"action": "COUNTER", "terms": body})


ACCEPT = 'Agreed, let us close.\n{"action": "ACCEPT", "terms": []}'


class HoldingBuyer:
    """Counters the same terms every turn and never accepts: every episode runs to the cap."""

    spec = "test:holding"

    def respond(self, view):
        return Reply("I can only do this.\n" + json.dumps({"action": "COUNTER",
                                                             "terms": [{"name": "purchase_price", "value": 50}]}))


def holding_factory(spec, role):
    return HoldingBuyer()


def start(buyer: str = BUYER, seed: int = 3) -> dict:
    return EpisodeState(domain="acquisition", seed=seed, buyer=buyer, sample_seed=seed).model_dump(mode="json")


def drive(logic: NegotiationStepLogic, texts: list[str], state: dict, max_turns: int = 13):
    """NeMo-RL's loop for one sample: append the generation, step, append the observation."""
    log, rewards, out = [{"role": "user", "content": "opening prompt"}], [], None
    for text in texts[:max_turns]:
        log.append({"role": "assistant", "content": text})
        out = logic.step([log], [state])
        rewards.append(out.rewards[0])
        if out.terminateds[0]:
            break
        log.append(out.observations[0])
        state = out.metadata[0]
    return rewards, out


def test_first_step_pays_the_floor_and_returns_the_buyers_prose_in_turn_tags():
    with NegotiationStepLogic(SETTINGS) as logic:
        log = [{"role": "user", "content": "p"}, {"role": "assistant", "content": counter(purchase_price=90)}]
        out = logic.step([log], [start()])
        assert out.rewards == [-0.3]
        assert out.terminateds == [False]
        assert out.next_stop_strings == [None]
        state = EpisodeState.model_validate(out.metadata[0])
        assert state.seller_steps == 1 and len(state.turns) == 2 and state.turns[0] == counter(purchase_price=90)
        buyer_prose = replay(state, SETTINGS).turns[1].prose.strip()
        assert buyer_prose and "{" not in buyer_prose  # the buyer's JSON never reaches the seller
        assert out.observations[0] == {"role": "user",
                                       "content": "\n<|turn>user\n" + buyer_prose + "<turn|>\n<|turn>model\n"}


def test_no_deal_at_the_cap_sums_to_eq1_with_every_penalty():
    # 12 seller turns, one malformed ("hello"): r = -λ - g_fmt * 1/12 - g_len * (12 - 9)/(12 - 9)
    with NegotiationStepLogic(SETTINGS, agent_factory=holding_factory) as logic:
        texts = ["hello"] + [counter(purchase_price=95)] * 12
        rewards, out = drive(logic, texts, start())
        assert len(rewards) == 12 and out.terminateds == [True] and out.answers == ["no_deal"]
        assert rewards[0] == pytest.approx(-0.3)
        assert rewards[1:11] == [0.0] * 10
        assert sum(rewards) == pytest.approx(-0.3 - 0.05 / 12 - 0.05)
        assert out.observations[0]["content"] == ""


def test_seller_accept_closes_the_deal_and_pays_utility_on_the_last_step():
    with NegotiationStepLogic(SETTINGS, agent_factory=holding_factory) as logic:
        rewards, out = drive(logic, [counter(purchase_price=95), ACCEPT], start())
        state = EpisodeState.model_validate(out.metadata[0])
        episode = replay(state, SETTINGS).record("s", "b")
        assert out.answers == ["deal"] and episode.final_ledger == {"purchase_price": 50}
        # Two rounds, nothing malformed: Eq. 1 = Ũ; steps are -λ then Ũ + λ.
        assert rewards == [pytest.approx(-0.3), pytest.approx(episode.seller_score.u_tilde + 0.3)]
        assert sum(rewards) == pytest.approx(episode.seller_score.u_tilde)


def test_a_truncated_episode_keeps_the_floor():
    with NegotiationStepLogic(SETTINGS, agent_factory=holding_factory) as logic:
        rewards, out = drive(logic, [counter(purchase_price=95)] * 5, start(), max_turns=5)
        assert out.terminateds == [False]
        assert sum(rewards) == pytest.approx(-0.3)


def test_rewards_sum_to_the_episode_reward_against_a_scripted_buyer():
    with NegotiationStepLogic(SETTINGS) as logic:
        seller = make_agent("scripted:conceder", "seller")
        state, log, rewards = start(), [{"role": "user", "content": "p"}], []
        for _ in range(13):
            log.append({"role": "assistant", "content": seller.respond(replay(EpisodeState(**state), SETTINGS).view()).text})
            out = logic.step([log], [state])
            rewards.append(out.rewards[0])
            if out.terminateds[0]:
                break
            log.append(out.observations[0])
            state = out.metadata[0]
        reference = run_episode(replay(EpisodeState(**start()), SETTINGS).scenario, make_agent("scripted:conceder", "seller"),
                                make_agent(BUYER, "buyer"), SETTINGS.env_config(), sample_seed=3)
        assert out.terminateds == [True]
        assert len(rewards) == reference.n_turns_of("seller")
        assert sum(rewards) == pytest.approx(episode_reward(reference))


def test_a_batch_steps_each_sample_on_its_own_state():
    with NegotiationStepLogic(SETTINGS, agent_factory=holding_factory) as logic:
        first = [{"role": "user", "content": "p"}, {"role": "assistant", "content": counter(purchase_price=95)}]
        out = logic.step([first, first], [start(seed=3), start(seed=4)])
        seeds = [EpisodeState.model_validate(m).seed for m in out.metadata]
        assert seeds == [3, 4] and out.rewards == [-0.3, -0.3]


def test_bad_inputs_name_the_sample_and_key():
    with NegotiationStepLogic(SETTINGS) as logic:
        log = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "x"}]
        with pytest.raises(ConfigError, match="sample 0:extra_env_info: missing"):
            logic.step([log], [None])
        with pytest.raises(ConfigError, match="sample 0:extra_env_info: not an episode state"):
            logic.step([log], [{"domain": "acquisition"}])
        with pytest.raises(ValueError, match="last message must be the seller's generation, got role 'user'"):
            logic.step([log[:1]], [start()])
        with pytest.raises(ConfigError, match="turn_tags: missing"):
            NegotiationStepLogic(SETTINGS.model_copy(update={"turn_tags": None}))


def test_return_metrics_read_the_deal_rate_off_the_returns():
    metrics = return_metrics([0.5, -0.4, 0.1, -0.3], SETTINGS)
    assert metrics["mean_return"] == pytest.approx(-0.025)
    assert metrics["deal_rate"] == 0.5  # -0.3 is the floor itself: a no-deal
    assert (metrics["min_return"], metrics["max_return"]) == (-0.4, 0.5)
    assert return_metrics([], SETTINGS) == {}


_SELLER_TEXT = st.one_of(
    st.builds(counter, purchase_price=st.floats(0, 200, allow_nan=False)),
    st.just(ACCEPT), st.text(max_size=30),
)


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(_SELLER_TEXT, min_size=12, max_size=12), seed=st.integers(0, 4999))
def test_step_rewards_always_sum_to_eq1(texts, seed):
    with NegotiationStepLogic(SETTINGS) as logic:
        rewards, out = drive(logic, texts, start(seed=seed))
        assert out.terminateds == [True]  # the environment, not the driver, ends every episode
        episode = replay(EpisodeState.model_validate(out.metadata[0]), SETTINGS).record("s", BUYER)
        assert sum(rewards) == pytest.approx(episode_reward(episode))
        assert rewards[0] == pytest.approx(-0.3 if len(rewards) > 1 else episode_reward(episode))


@pytest.mark.parametrize("variant", [e_series, conventional])
def test_the_rollout_is_the_training_chat_rendered_by_the_arms_template(variant):
    # NeMo-RL's sequence (rendered opening prompt, then per step the generation, its end-of-turn
    # token and the raw observation) must equal the template's render of the seller's training
    # chat, up to the thought prologue a conventional template drops from past turns.
    tokenizer = variant()
    tags = derive_turn_tags(tokenizer, template_kwargs(False))
    settings_ = env_settings("paper", tags=tags)
    state = start()
    chat = render_messages(replay(EpisodeState(**state), settings_).view(), "training", converge_from_turn=16)
    rollout = tokenizer.apply_chat_template(chat, add_generation_prompt=True, **tags.template_kwargs)
    log = [{"role": "user", "content": rollout}]
    with NegotiationStepLogic(settings_) as logic:
        for price in (95, 90, 85):
            log.append({"role": "assistant", "content": counter(purchase_price=price)})
            out = logic.step([log], [state])
            rollout += log[-1]["content"] + tags.end_of_turn + out.observations[0]["content"]
            log.append(out.observations[0])
            state = out.metadata[0]
    chat = render_messages(replay(EpisodeState(**state), settings_).view(), "training", converge_from_turn=16)
    assert [m["role"] for m in chat[-2:]] == ["assistant", "user"] and len(chat) == 8
    expected = tokenizer.apply_chat_template(chat, add_generation_prompt=True, **tags.template_kwargs)
    prologue, history_open = tags.generation_prompt, tags.history_model_open
    assert rollout.replace(prologue, history_open) == expected.replace(prologue, history_open)
    assert rollout.endswith(prologue) and expected.endswith(prologue)
