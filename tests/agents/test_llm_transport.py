"""Transports: every HTTP outcome classified as transient (retried) or permanent (error row)."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from tests.agents.car_prefs import SCENARIO

from negotiation.agents._llm_transport import (
    CallFailure,
    HttpTransport,
    failure_from_status,
    parse_completion,
    parse_retry_after,
)
from negotiation.env import EnvConfig, Negotiation, render_messages
from negotiation.evaluation import Faults, StandinConfig, StandinServer

ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)
MESSAGES = render_messages(Negotiation(SCENARIO, ENV).view(), converge_from_turn=16)


def call(faults: Faults, model: str = "boulware", timeout: float = 2.0, params=None):
    with StandinServer(StandinConfig(max_turns=24, faults=faults)) as server:
        transport = HttpTransport(server.api_base, model, api_key_env=None, timeout_s=timeout, max_connections=4)

        async def go():
            try:
                return await transport.complete(MESSAGES, params or {"seed": 1}, {"top_k": 64})
            finally:
                await transport.aclose()

        return asyncio.run(go())


def failure(faults: Faults, **kw) -> CallFailure:
    with pytest.raises(CallFailure) as info:
        call(faults, **kw)
    return info.value


def test_a_reply_carries_text_and_usage():
    completion = call(Faults())
    assert '"action"' in completion.text and completion.tokens_in > 500 and completion.tokens_out > 10


@pytest.mark.parametrize("kind, error_class", [("429", "RateLimitError"), ("500", "InternalServerError"),
                                               ("drop", "APIConnectionError"), ("malformed", "MalformedResponse")])
def test_transient_faults(kind, error_class):
    got = failure(Faults(error_rate=1.0, kinds=(kind,), retry_after_s=3.0))
    assert (got.error_class, got.transient) == (error_class, True)
    if kind == "429":
        assert got.retry_after == 3.0 and got.status == 429


def test_a_stalled_request_times_out_as_transient():
    got = failure(Faults(error_rate=1.0, kinds=("timeout",), hang_s=3.0), timeout=0.1)
    assert (got.error_class, got.transient) == ("Timeout", True)


def test_permanent_failures():
    bad = failure(Faults(bad_request_rate=1.0))
    assert (bad.error_class, bad.transient, bad.status) == ("BadRequestError", False, 400)
    unknown = failure(Faults(), model="gpt-99")
    assert (unknown.error_class, unknown.transient) == ("NotFoundError", False)
    refused = failure(Faults(reject_params=("seed",)))
    assert refused.param == "seed" and "seed" in refused.message


def test_status_classes_by_hand():
    cases = {401: ("AuthenticationError", False), 403: ("PermissionDeniedError", False),
             408: ("Timeout", True), 409: ("ConflictError", True), 422: ("UnprocessableEntityError", False),
             418: ("APIError", False), 502: ("BadGatewayError", True), 503: ("ServiceUnavailableError", True),
             599: ("InternalServerError", True)}
    for status, want in cases.items():
        got = failure_from_status(status, '{"error": {"message": "m"}}', {})
        assert (got.error_class, got.transient) == want and got.message == f"HTTP {status}: m"
    too_long = failure_from_status(400, '{"error": {"message": "maximum context length exceeded"}}', {})
    assert too_long.error_class == "ContextWindowExceededError" and not too_long.transient
    assert failure_from_status(500, "plain text", {}).message == "HTTP 500: plain text"


def test_retry_after_headers():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.0 <= parse_retry_after({"retry-after": in_ten}) <= 10.0


def test_completion_bodies():
    ok = parse_completion({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3,
                                                                                  "completion_tokens": 1}})
    assert (ok.text, ok.tokens_in, ok.tokens_out) == ("hi", 3, 1)
    assert parse_completion({"choices": [{"message": {"content": None}}]}).text == ""  # a refusal: empty turn
    for body in ({}, {"choices": []}, {"choices": [{"no": 1}]}, [1]):
        with pytest.raises(CallFailure, match="MalformedResponse"):
            parse_completion(body)


def test_failure_messages_are_redacted(monkeypatch):
    monkeypatch.setenv("PLANTED_API_KEY", "planted-secret-value-42")
    got = failure_from_status(401, '{"error": {"message": "bad key planted-secret-value-42"}}', {})
    assert "planted-secret-value-42" not in got.message and "[redacted:PLANTED_API_KEY]" in got.message
