"""Spec strings ``kind:target?k=v`` and the lazy kind registry."""

from __future__ import annotations

import pytest

from negotiation.agents import AgentSpec, ScriptedAgent, make_agent, parse_spec, register_kind
from negotiation.agents import _spec
from negotiation.errors import ConfigError


def test_plain_and_optioned_specs():
    assert parse_spec("scripted:boulware") == AgentSpec("scripted", "boulware", {}, "scripted:boulware")
    text = "litellm:openai/my-model?api_base=http://127.0.0.1:8000/v1&temperature=0.7"
    spec = parse_spec(text)
    assert (spec.kind, spec.target) == ("litellm", "openai/my-model")
    assert spec.options == {"api_base": "http://127.0.0.1:8000/v1", "temperature": "0.7"}
    assert spec.option("temperature", 1.0, float) == 0.7
    assert spec.option("top_p", 0.95, float) == 0.95
    assert parse_spec("policy:/tmp/ckpt:v2").target == "/tmp/ckpt:v2"  # only the first colon splits


@pytest.mark.parametrize("text,match", [
    ("boulware", r"agent spec 'boulware': expected 'kind:target'"),
    ("robot:x", r"agent spec 'robot:x':kind: unknown kind 'robot'; known: hf, litellm, policy, scripted, vllm"),
    ("scripted:", r"agent spec 'scripted:':target: empty"),
    ("scripted:?e=1", r"agent spec 'scripted:\?e=1':target: empty"),
])
def test_malformed_specs_name_the_bad_part(text, match):
    with pytest.raises(ConfigError, match=match):
        parse_spec(text)


def test_bad_option_value_names_spec_key_and_value():
    with pytest.raises(ConfigError, match=r"agent spec 'scripted:boulware\?e=abc':e: cannot read 'abc'"):
        make_agent("scripted:boulware?e=abc", "seller")


def test_scripted_factory_errors():
    with pytest.raises(ConfigError, match=r"'scripted:nope':persona: unknown 'nope'; known: boulware, conceder"):
        make_agent("scripted:nope", "buyer")
    with pytest.raises(ConfigError, match=r"'scripted:conceder\?e=0':e: must be > 0, got 0.0"):
        make_agent("scripted:conceder?e=0", "buyer")


def test_make_agent_builds_scripted_agents_with_options():
    agent = make_agent("scripted:boulware?e=0.5&floor=0.6", "buyer")
    assert isinstance(agent, ScriptedAgent)
    assert (agent.spec, agent.role) == ("scripted:boulware?e=0.5&floor=0.6", "buyer")
    assert (agent.strategy.e, agent.strategy.floor, agent.strategy.start) == (0.5, 0.6, 1.0)
    assert make_agent(parse_spec("scripted:fixed?target=0.7"), "seller").strategy.level == 0.7


def test_registered_kinds_resolve_lazily(monkeypatch):
    monkeypatch.setattr(_spec, "_FACTORIES", dict(_spec._FACTORIES))
    register_kind("echo", "negotiation.agents._scripted:make_scripted")
    assert make_agent("echo:linear", "seller").strategy.e == 1.0
    register_kind("ghost", "negotiation_ghost_module:make")
    with pytest.raises(ConfigError, match=r"kind 'ghost' needs a package that is missing \(negotiation_ghost_module\)"):
        make_agent("ghost:x", "seller")
