"""The stand-in server: real negotiations over HTTP, deterministic replies, and every fault knob."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from tests.evaluation.helpers import ENV, standin

from negotiation.agents import make_agent
from negotiation.env import Negotiation, load_domain, make_scenario, render_messages
from negotiation.evaluation import PERSONAS, read_view

SCENARIO = make_scenario(load_domain("job_offer"), 5_000_003)


MESSAGES = render_messages(Negotiation(SCENARIO, ENV).view(), converge_from_turn=16)


def body(model="boulware", seed=7, **extra):
    return {"model": model, "messages": MESSAGES, "seed": seed, "temperature": 1.0, **extra}


CLIENT = httpx.Client(timeout=5)  # one client: building one per request costs more than the request


def post(server, payload, **kw):
    return CLIENT.post(f"{server.api_base}/chat/completions", json=payload, **kw)


def test_health_models_and_a_reply_from_the_named_persona(server):
    assert httpx.get(f"http://127.0.0.1:{server.port}/health").status_code == 200
    assert [m["id"] for m in httpx.get(f"{server.api_base}/models").json()["data"]] == list(PERSONAS)
    payload = body()
    reply = post(server, payload).json()
    text = reply["choices"][0]["message"]["content"]
    # The same persona, given the view the prompt describes and the request's seed, says the same.
    view = read_view(payload["messages"], sample_seed=7, max_turns=ENV.max_turns)
    assert text == make_agent("scripted:boulware", "seller").respond(view).text
    chars = sum(len(m["content"]) for m in payload["messages"])
    assert reply["usage"] == {"prompt_tokens": -(-chars // 4), "completion_tokens": -(-len(text) // 4),
                              "total_tokens": -(-chars // 4) + -(-len(text) // 4)}


def test_replies_depend_on_prompt_and_seed_only(server):
    first = [post(server, body(seed=s)).json()["choices"][0]["message"]["content"] for s in (1, 2, 1)]
    assert first[0] == first[2] and first[0] != first[1]


def test_unknown_model_is_a_404_and_an_unreadable_prompt_a_400(server):
    assert post(server, body(model="gpt-9")).status_code == 404
    r = post(server, {"model": "boulware", "messages": [{"role": "user", "content": "hi"}], "seed": 1})
    assert r.status_code == 400 and "cannot read the prompt" in r.json()["error"]["message"]


def test_rejected_parameter_is_named():
    with standin(reject_params=("temperature",)) as srv:
        r = post(srv, body())
        assert r.status_code == 400 and r.json()["error"]["param"] == "temperature"
        payload = body()
        del payload["temperature"]
        assert post(srv, payload).status_code == 200


def test_429_carries_retry_after_and_500_is_a_server_error():
    with standin(error_rate=1.0, kinds=("429",), retry_after_s=2.5) as srv:
        r = post(srv, body())
        assert r.status_code == 429 and r.headers["retry-after"] == "2.5"
    with standin(error_rate=1.0, kinds=("500",)) as srv:
        assert post(srv, body()).status_code == 500


def test_malformed_body_is_truncated_json():
    with standin(error_rate=1.0, kinds=("malformed",)) as srv:
        r = post(srv, body())
        assert r.status_code == 200
        with pytest.raises(ValueError):
            json.loads(r.content)


def test_drop_and_timeout_close_the_connection_without_a_reply():
    with standin(error_rate=1.0, kinds=("drop",)) as srv:
        with pytest.raises(httpx.RemoteProtocolError):
            post(srv, body())
    with standin(error_rate=1.0, kinds=("timeout",), hang_s=5.0) as srv:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{srv.api_base}/chat/completions", json=body(), timeout=0.2)


def test_error_rate_is_a_fraction_of_requests():
    with standin(error_rate=0.2, kinds=("500",), seed=3) as srv:
        codes = [post(srv, body(seed=i)).status_code for i in range(200)]
    assert 25 <= codes.count(500) <= 55  # Binomial(200, 0.2): mean 40, sd 5.7


def test_bad_request_rate_is_deterministic_in_the_body():
    with standin(bad_request_rate=0.5) as srv:
        codes = {s: post(srv, body(seed=s)).status_code for s in range(30)}
        again = {s: post(srv, body(seed=s)).status_code for s in range(30)}
    assert codes == again and set(codes.values()) == {200, 400}


def test_echo_auth_puts_the_credentials_in_error_bodies():
    with standin(error_rate=1.0, kinds=("500",), echo_auth=True) as srv:
        r = post(srv, body(), headers={"Authorization": "Bearer sk-test-echo-123456789"})
    assert "sk-test-echo-123456789" in r.text


def test_a_bound_port_is_a_config_error():
    from negotiation.errors import ConfigError
    from negotiation.evaluation import StandinConfig, StandinServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
            StandinServer(StandinConfig(port=port, max_turns=24)).start()
