"""``hf:`` agents: the model's own chat template with thinking off, the protocol's sampling, per-turn seeds,
with a fake ``transformers`` module (the real one is an optional extra)."""

from __future__ import annotations

import sys
import types

import pytest
import torch
from car_prefs import SCENARIO

from negotiation.agents import parse_spec
from negotiation.agents._llm import LLMSettings, make_hf_agent
from negotiation.agents._llm_sampling import Sampling
from negotiation.env import EnvConfig, Negotiation
from negotiation.errors import ConfigError

ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)
SETTINGS = LLMSettings(sampling=Sampling(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=768),
                       sampling_role="self_served_seller", converge_from_turn=16)
PROMPT_LEN = 5


class Inputs(dict):
    def to(self, device):
        return self


class FakeTokenizer:
    calls: list = []

    @classmethod
    def from_pretrained(cls, path):
        return cls()

    def apply_chat_template(self, messages, **kwargs):
        FakeTokenizer.calls.append((messages, kwargs))
        return "PROMPT"

    def __call__(self, text, return_tensors, add_special_tokens):
        assert (text, return_tensors, add_special_tokens) == ("PROMPT", "pt", False)
        return Inputs(input_ids=torch.zeros((1, PROMPT_LEN), dtype=torch.long))

    def decode(self, tokens, skip_special_tokens):
        return "tokens " + " ".join(str(int(t)) for t in tokens)


class FakeModel:
    device = "cpu"
    kwargs: dict = {}

    @classmethod
    def from_pretrained(cls, path, device_map):
        return cls()

    def generate(self, input_ids, **kwargs):
        FakeModel.kwargs = kwargs
        new = torch.randint(0, 1000, (1, 3))  # draws from torch's generator: shows the seeding
        return torch.cat([input_ids, new], dim=1)


@pytest.fixture
def fake_transformers(monkeypatch):
    module = types.SimpleNamespace(AutoTokenizer=FakeTokenizer, AutoModelForCausalLM=FakeModel)
    monkeypatch.setitem(sys.modules, "transformers", module)
    FakeTokenizer.calls = []
    return module


def test_reply_uses_template_thinking_off_sampling_and_token_counts(fake_transformers):
    agent = make_hf_agent(parse_spec("hf:/models/gemma"), "seller", SETTINGS)
    assert agent.blocking and agent.prompt_hash.startswith("evaluation@1:")
    reply = agent.respond(Negotiation(SCENARIO, ENV).view())
    messages, kwargs = FakeTokenizer.calls[0]
    assert kwargs == {"tokenize": False, "add_generation_prompt": True, "enable_thinking": False}
    assert [m["role"] for m in messages] == ["system", "user"]
    assert FakeModel.kwargs == {"do_sample": True, "max_new_tokens": 768, "temperature": 1.0, "top_p": 0.95, "top_k": 64}
    assert (reply.tokens_in, reply.tokens_out) == (PROMPT_LEN, 3) and reply.text.startswith("tokens ")


def test_same_turn_same_sample_and_the_global_generator_is_untouched(fake_transformers):
    agent = make_hf_agent(parse_spec("hf:/models/gemma"), "seller", SETTINGS)
    view = Negotiation(SCENARIO, ENV).view()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first, second = agent.respond(view).text, agent.respond(view).text
    assert first == second
    assert torch.equal(torch.get_rng_state(), before)


def test_temperature_zero_is_greedy_and_overrides_apply(fake_transformers):
    agent = make_hf_agent(parse_spec("hf:/models/gemma?temperature=0&max_tokens=32"), "seller", SETTINGS)
    agent.respond(Negotiation(SCENARIO, ENV).view())
    assert FakeModel.kwargs == {"do_sample": False, "max_new_tokens": 32}


def test_missing_transformers_is_a_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails
    agent = make_hf_agent(parse_spec("hf:/models/gemma"), "seller", SETTINGS)
    with pytest.raises(ConfigError, match="transformers"):
        agent.respond(Negotiation(SCENARIO, ENV).view())
