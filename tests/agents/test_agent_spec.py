"""Spec strings ``kind:target?k=v`` and the lazy kind registry."""

from __future__ import annotations

import pytest

from negotiation.agents import AgentKind, AgentSpec, ScriptedAgent, make_agent, parse_spec, register_kind
from negotiation.agents import _kinds
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
    ("robot:x", r"agent spec 'robot:x':kind: unknown kind 'robot'; known: hf, litellm, negmas, policy, scripted, vllm"),
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
    with pytest.raises(ConfigError, match=r"'scripted:conceder\?e=0':e: '0' is out of range; expected a finite number > 0"):
        make_agent("scripted:conceder?e=0", "buyer")


def test_make_agent_builds_scripted_agents_with_options():
    agent = make_agent("scripted:boulware?e=0.5&floor=0.6", "buyer")
    assert isinstance(agent, ScriptedAgent)
    assert (agent.spec, agent.role) == ("scripted:boulware?e=0.5&floor=0.6", "buyer")
    assert (agent.strategy.e, agent.strategy.floor, agent.strategy.start) == (0.5, 0.6, 1.0)
    assert make_agent(parse_spec("scripted:fixed?target=0.7"), "seller").strategy.level == 0.7


def test_registered_kinds_resolve_lazily(monkeypatch):
    monkeypatch.setattr(_kinds, "_KINDS", dict(_kinds._KINDS))
    register_kind(AgentKind("echo", "negotiation.agents._scripted:make_scripted", "reference_seller"))
    assert make_agent("echo:linear", "seller").strategy.e == 1.0
    register_kind(AgentKind("ghost", "negotiation_ghost_module:make", "reference_seller"))
    with pytest.raises(ConfigError, match=r"kind 'ghost' needs a package that is missing \(negotiation_ghost_module\)"):
        make_agent("ghost:x", "seller")


# Regression: max_concurrency=0 hung forever, -1 crashed, timeout=-5 made every call an error
# row; max_attempts=0, e=nan, target=-inf, floor=1e309 and typos were accepted silently.
@pytest.mark.parametrize("spec, option, allowed", [
    ("litellm:openai/m?max_concurrency=0", "max_concurrency", "an integer >= 1 and <= 4096"),
    ("litellm:openai/m?max_concurrency=-1", "max_concurrency", "an integer >= 1"),
    ("litellm:openai/m?timeout=-5", "timeout", "a finite number > 0"),
    ("litellm:openai/m?timeout=inf", "timeout", "a finite number > 0"),
    ("litellm:openai/m?max_attempts=0", "max_attempts", "an integer >= 1"),
    ("litellm:openai/m?usd_per_mtok_in=-1", "usd_per_mtok_in", "a finite number >= 0"),
    ("litellm:openai/m?seed=maybe", "seed", "true or false"),
    ("litellm:openai/m?tempreature=0.1", "tempreature", "did you mean 'temperature'"),
    ("litellm:openai/m?api_key_env=not%20a%20name", "api_key_env", "an environment variable name"),
    ("scripted:boulware?e=nan", "e", "a finite number > 0"),
    ("scripted:fixed?target=-inf", "target", "a finite number >= 0 and <= 1"),
    ("scripted:linear?floor=1e309", "floor", "a finite number >= 0 and <= 1"),
    ("scripted:titfortat?drift=2", "drift", "<= 1"),
    ("scripted:fixed?floor=0.2", "floor", "known: readable, target"),
    ("policy:some/dir?x=1", "x", "known: none"),
])
def test_agent_options_are_validated_by_kind(spec, option, allowed):
    with pytest.raises(ConfigError) as info:
        make_agent(spec, "seller")
    message = str(info.value)
    assert f":{option}:" in message and allowed in message, message


@pytest.mark.parametrize("option", ["key", "api-key", "API_KEY", "apiKey", "api.key", "token", "access_token",
                                    "password", "secret", "Authorization", "bearer", "credentials"])
def test_inline_keys_are_refused_under_any_spelling(option):
    with pytest.raises(ConfigError, match="secrets come from the environment only") as info:
        parse_spec(f"litellm:openai/m?{option}=hunter2hunter2")
    assert "hunter2hunter2" not in str(info.value)


def test_a_key_shaped_value_is_refused_whatever_its_option():
    with pytest.raises(ConfigError, match="looks like a credential"):
        parse_spec("litellm:openai/m?api_base=http://h/v1&note=sk-abcdefghijklmnop1234")
