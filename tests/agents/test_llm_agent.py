"""LLM agents: what is sent, what comes back (tokens, cost, retries), sampling records and fallbacks."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from tests.agents.car_prefs import SCENARIO

from negotiation.agents import parse_spec
from negotiation.agents._llm import make_litellm_agent
from negotiation.agents._llm_settings import LLMSettings, default_sampling_role, llm_settings, turn_seed
from negotiation.agents._llm_retry import AgentCallError, RetryPolicy
from negotiation.agents._llm_sampling import Decoding, SamplingDriftWarning
from negotiation.agents._llm_transport import Completion
from negotiation.env import EnvConfig, Negotiation
from negotiation.errors import ConfigError
from negotiation.evaluation import Faults, StandinConfig, StandinServer
from negotiation.study import load_study

ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)
PAPER = load_study("paper").protocol
FAST = RetryPolicy(max_attempts=6, base_delay_s=0.001, max_delay_s=0.002, timeout_s=1.0)
SETTINGS = LLMSettings(sampling=Decoding(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=768),
                       sampling_role="self_served_seller", converge_from_turn=16, retry=FAST)


def agent(spec: str, role: str = "seller", settings: LLMSettings = SETTINGS):
    return make_litellm_agent(parse_spec(spec), role, settings)


def view(role="seller"):
    game = Negotiation(SCENARIO, ENV)
    if role == "buyer":
        game.apply('Hello. {"action": "COUNTER", "terms": [{"name": "price", "value": 55}]}')
    return game.view()


class Capture:
    """A transport that records what the agent sends."""

    name = "http"

    def __init__(self):
        self.sent = []

    async def complete(self, messages, params, extra):
        self.sent.append((messages, dict(params), dict(extra)))
        return Completion("Fine. {\"action\": \"ACCEPT\"}", 120, 8)


def test_protocol_settings_per_role():
    served = llm_settings(PAPER, "self_served_seller")
    assert served.sampling == Decoding(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=768)
    assert served.converge_from_turn == 16
    assert llm_settings(PAPER, "reference_seller").sampling == Decoding(temperature=0.7)
    assert llm_settings(PAPER, "buyer").sampling == Decoding(temperature=1.0)
    assert [default_sampling_role(k, r) for k, r in (("vllm", "seller"), ("hf", "seller"), ("litellm", "seller"),
                                                      ("litellm", "buyer"), ("vllm", "buyer"))] == \
        ["self_served_seller", "self_served_seller", "reference_seller", "buyer", "buyer"]


def test_request_carries_the_protocols_sampling_and_a_per_turn_seed():
    a = agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1")
    a.transport = Capture()
    reply = asyncio.run(a.arespond(view()))
    messages, params, extra = a.transport.sent[0]
    assert params == {"temperature": 1.0, "top_p": 0.95, "max_tokens": 768, "seed": turn_seed(SCENARIO.seed, 1, "seller")}
    assert extra == {"top_k": 64, "chat_template_kwargs": {"enable_thinking": False}}
    assert [m["role"] for m in messages] == ["system", "user"] and "This is turn 1" in messages[1]["content"]
    assert (reply.tokens_in, reply.tokens_out, reply.retries, reply.cost) == (120, 8, 0, None)
    assert a.record.sent == {"temperature": 1.0, "top_p": 0.95, "max_tokens": 768, "top_k": 64, "thinking": False,
                             "seed": "per-turn"}
    assert a.record.drift() == [] and a.prompt_hash.startswith("evaluation@1:")


def test_turn_seeds_are_stable_and_distinct():
    seeds = {turn_seed(5, t, r) for t in range(1, 25) for r in ("seller", "buyer")}
    assert len(seeds) == 48 and all(0 <= s < 2**31 for s in seeds)
    assert turn_seed(5, 3, "buyer") == turn_seed(5, 3, "buyer")


def test_spec_overrides_warn_at_start():
    with pytest.warns(SamplingDriftWarning, match=r"temperature: requested 1.0, sending 0.7"):
        a = agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1&temperature=0.7&seed=false")
    assert a.record.sent["temperature"] == 0.7 and "seed" not in a.record.sent


def test_reply_over_http_with_retries_and_a_spec_price():
    faults = Faults(error_rate=0.5, kinds=("500", "429"), seed=1)
    with StandinServer(StandinConfig(max_turns=24, faults=faults)) as server:
        a = agent(f"litellm:openai/boulware?api_base={server.api_base}&usd_per_mtok_in=2&usd_per_mtok_out=10")
        replies = [asyncio.run(a.arespond(view())) for _ in range(6)]
        faulted = server.handler.counts["500"] + server.handler.counts["429"]
    assert sum(r.retries for r in replies) == faulted > 0
    for r in replies:
        assert r.text == replies[0].text and r.latency_s > 0
        assert r.cost == pytest.approx(r.tokens_in * 2e-6 + r.tokens_out * 10e-6)
    assert a.calls_ok == 6


def test_a_refused_parameter_is_dropped_and_recorded():
    with StandinServer(StandinConfig(max_turns=24, faults=Faults(reject_params=("temperature",)))) as server:
        a = agent(f"litellm:openai/boulware?api_base={server.api_base}")
        with pytest.warns(SamplingDriftWarning, match="refused temperature"):
            first = asyncio.run(a.arespond(view()))
        second = asyncio.run(a.arespond(view("buyer")))
    assert first.retries == 0 and second.text
    assert list(a.record.rejected) == ["temperature"] and "temperature" in a.record.rejected["temperature"]
    assert "temperature" not in a.params and "temperature" not in a.record.accepted
    assert a.record.accepted["top_p"] == 0.95
    assert a.record.drift()[-1].startswith("temperature: rejected by the provider")


def test_a_permanent_error_raises_agent_call_error():
    with StandinServer(StandinConfig(max_turns=24, faults=Faults(bad_request_rate=1.0))) as server:
        a = agent(f"litellm:openai/boulware?api_base={server.api_base}")
        with pytest.raises(AgentCallError) as info:
            asyncio.run(a.arespond(view()))
    err = info.value
    assert (err.error_class, err.transient, err.retries, err.role) == ("BadRequestError", False, 0, "seller")


def test_exhausted_retries_raise_with_the_count():
    with StandinServer(StandinConfig(max_turns=24, faults=Faults(error_rate=1.0, kinds=("500",)))) as server:
        a = agent(f"litellm:openai/boulware?api_base={server.api_base}")
        with pytest.raises(AgentCallError, match="retries exhausted") as info:
            asyncio.run(a.arespond(view()))
    assert info.value.retries == FAST.max_attempts - 1 and info.value.transient


def test_synchronous_respond():
    with StandinServer(StandinConfig(max_turns=24)) as server:
        reply = agent(f"litellm:openai/boulware?api_base={server.api_base}").respond(view())
    assert '"action"' in reply.text


def test_inline_keys_are_refused_and_key_variables_are_read_at_call_time(monkeypatch):
    with pytest.raises(ConfigError, match="api_key_env"):
        agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1&api_key=sk-abc")
    monkeypatch.setenv("MY_ENDPOINT_KEY", "secret-value-123")
    a = agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1&api_key_env=MY_ENDPOINT_KEY")

    async def header():
        client = a.transport._client()
        value = client.headers["authorization"]
        await a.aclose()
        return value

    assert asyncio.run(header()) == "Bearer secret-value-123"
    assert "secret-value-123" not in a.record.model_dump_json()


def test_providers_without_top_k_or_thinking_switch_are_planned_with_reasons():
    openai = agent("litellm:openai/gpt-4o")
    assert openai.transport.name == "litellm"
    assert openai.record.not_sent["top_k"] == "openai has no top_k parameter"
    assert "thinking" in openai.record.not_sent and "top_k" not in openai.params
    anthropic = agent("litellm:anthropic/claude-3-5-sonnet-20240620?seed=false")
    assert anthropic.params["top_k"] == 64 and "top_k" not in anthropic.record.not_sent


def test_litellm_transport_against_the_standin():
    with StandinServer(StandinConfig(max_turns=24, faults=Faults(error_rate=0.3, kinds=("500",), seed=2))) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplingDriftWarning)
            a = agent(f"litellm:openai/boulware?api_base={server.api_base}&transport=litellm")
        assert a.transport.name == "litellm"
        replies = [asyncio.run(a.arespond(view())) for _ in range(3)]
        failures = server.handler.counts["500"]
    assert len({r.text for r in replies}) == 1 and '"action"' in replies[0].text
    assert sum(r.retries for r in replies) == failures


def test_agents_built_without_settings_read_the_spec_study():
    buyer = make_litellm_agent(parse_spec("litellm:openai/m?api_base=http://127.0.0.1:9/v1&study=paper"), "buyer")
    assert buyer.record.requested == {"temperature": 1.0} and buyer.settings.converge_from_turn == 16
    with pytest.raises(ConfigError, match="sampling"):
        make_litellm_agent(parse_spec("litellm:openai/m?api_base=http://x/v1&sampling=bogus"), "buyer")
    with pytest.raises(ConfigError, match="prompt"):
        make_litellm_agent(parse_spec("litellm:openai/m?api_base=http://x/v1&prompt=bogus"), "buyer")


@pytest.mark.parametrize("faults, want", [
    (Faults(error_rate=1.0, kinds=("429",), retry_after_s=2.0), ("RateLimitError", True, 2.0)),
    (Faults(error_rate=1.0, kinds=("drop",)), ("InternalServerError", True, None)),
    (Faults(error_rate=1.0, kinds=("timeout",), hang_s=2.0), ("Timeout", True, None)),
    (Faults(bad_request_rate=1.0), ("BadRequestError", False, None)),
])
def test_litellm_failures_are_classified(faults, want):
    from negotiation.agents._llm_transport import CallFailure, LitellmTransport

    with StandinServer(StandinConfig(max_turns=24, faults=faults)) as server:
        transport = LitellmTransport("openai/boulware", api_base=server.api_base, api_key_env=None, timeout_s=0.3)
        with pytest.raises(CallFailure) as info:
            asyncio.run(transport.complete([{"role": "user", "content": "x"}], {}, {}))
    assert (info.value.error_class, info.value.transient, info.value.retry_after) == want


VLLM_OVERFLOW = ("'max_tokens' or 'max_completion_tokens' is too large: 768. This model's maximum context length "
                 "is 2048 tokens and your request has 1500 input tokens (768 > 2048 - 1500).")


class Overflowing:
    """A transport answering every request with vLLM's context-length 400, which names max_tokens."""

    name = "http"

    def __init__(self):
        self.sent = []

    async def complete(self, messages, params, extra):
        from negotiation.agents._llm_transport import failure_from_status

        self.sent.append(dict(params))
        body = '{"error": {"message": "%s", "type": "BadRequestError", "param": "max_tokens", "code": 400}}'
        raise failure_from_status(400, body % VLLM_OVERFLOW.replace('"', '\\"'), {})


def test_a_context_overflow_naming_max_tokens_is_no_refused_parameter():
    a = agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1")
    a.transport = Overflowing()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingDriftWarning)  # no "refused max_tokens"
        with pytest.raises(AgentCallError) as info:
            asyncio.run(a.arespond(view()))
    assert info.value.error_class == "ContextWindowExceededError" and not info.value.transient
    assert len(a.transport.sent) == 1 and a.transport.sent[0]["max_tokens"] == 768
    assert "max_tokens" in a.params and not a.record.rejected


@pytest.mark.parametrize("message, overflow", [
    (VLLM_OVERFLOW, True),
    ("This model's maximum context length is 4096 tokens. However, you requested 4865 tokens.", True),
    ("prompt is too long: 210000 tokens > 200000 maximum", True),
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1500 `inputs` tokens "
     "and 768 `max_new_tokens`; the request exceeds the model's maximum context", True),
    ("The input token count (40000) exceeds the maximum number of tokens allowed (32768).", True),
    ("Unsupported parameter: 'max_tokens' is not supported with this model.", False),
    ("temperature must be between 0 and 2", False),
])
def test_context_overflow_is_read_by_meaning(message, overflow):
    from negotiation.agents._llm_transport import failure_from_status, is_context_overflow

    assert is_context_overflow(message) is overflow
    got = failure_from_status(400, '{"error": {"message": %s, "param": "max_tokens"}}' % __import__("json").dumps(message), {})
    assert (got.error_class == "ContextWindowExceededError") is overflow


def choice(content, finish="stop", **message):
    return {"choices": [{"message": {"role": "assistant", "content": content, **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 768}}


@pytest.mark.parametrize("payload, empty", [
    (choice(None, "length"), "provider_empty:length"),
    (choice(None, "tool_calls", tool_calls=[{"id": "1", "type": "function"}]), "provider_empty:tool_call"),
    (choice(None, "stop", refusal="I can't help with that."), "provider_empty:refusal"),
    (choice(None, "content_filter"), "provider_empty:content_filter"),
    (choice(None), "provider_empty:null_content"),
    (choice(""), ""),  # the model's own empty answer: a bad parse of the model's
    (choice('{"action": "ACCEPT"}', "length"), ""),
])
def test_a_reply_without_text_says_why(payload, empty):
    from negotiation.agents._llm_transport import parse_completion

    assert parse_completion(payload).empty == empty


class Empty:
    """A transport whose first ``n`` replies have no text (content null, the token cap ran out)."""

    name = "http"

    def __init__(self, n):
        self.n, self.calls = n, 0

    async def complete(self, messages, params, extra):
        from negotiation.agents._llm_transport import parse_completion

        self.calls += 1
        if self.calls <= self.n:
            return parse_completion(choice(None, "length"))
        return parse_completion(choice('Deal. {"action": "ACCEPT"}'))


def test_a_provider_empty_reply_is_retried_then_marked_on_the_turn():
    a = agent("litellm:openai/m?api_base=http://127.0.0.1:9/v1")
    a.transport = Empty(1)
    reply = asyncio.run(a.arespond(view()))
    assert (reply.text, reply.retries, reply.empty, a.transport.calls) == ('Deal. {"action": "ACCEPT"}', 1, "", 2)

    a.transport = Empty(99)
    game = Negotiation(SCENARIO, ENV)
    reply = asyncio.run(a.arespond(game.view()))
    assert a.transport.calls == 3 and reply.retries == 2  # bounded: EMPTY_ATTEMPTS, not max_attempts (6)
    assert (reply.text, reply.empty) == ("", "provider_empty:length")
    record = game.apply(reply)
    assert not record.ok and record.error == "provider_empty:length"
