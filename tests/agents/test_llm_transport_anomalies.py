"""Every provider anomaly is a retry or an error row, never a crash.

A raw TCP server answers with hand-made HTTP responses (headers, encodings, bodies and usage
fields a provider or proxy could send). Regression tests for the adversarial review:
``Retry-After: soon`` raised ValueError, a 100k-deep body RecursionError, a bad gzip
``httpx.DecodingError`` and ``usage.prompt_tokens = Infinity`` OverflowError, each stopping the
whole evaluation.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading

import pytest

from negotiation.agents._llm_retry import RetryPolicy, call_with_retries
from negotiation.agents._llm_transport import CallFailure, HttpTransport, parse_retry_after

GOOD = json.dumps({"choices": [{"message": {"content": "hi"}}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


def response(status: int = 200, body: bytes = GOOD, headers: dict[str, str] | None = None,
             length: int | None = None) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body) if length is None else length}",
            "Content-Type: application/json", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def usage(**fields: object) -> bytes:
    body = {"choices": [{"message": {"content": "hi"}}], "usage": fields}
    return json.dumps(body, allow_nan=True).encode()


ANOMALIES = {
    "retry_after_soon": response(429, b"{}", {"Retry-After": "soon"}),
    "retry_after_nan": response(503, b"{}", {"Retry-After": "NaN", "retry-after-ms": "-inf"}),
    "retry_after_bad_date": response(429, b"{}", {"Retry-After": "Mon, 99 Foo 2024 99:99:99 GMT"}),
    "retry_after_huge": response(429, b"{}", {"Retry-After": "1e999"}),
    "deep_body": response(200, b"[" * 100_000 + b"]" * 100_000),
    "deep_error_body": response(500, b'{"error":' * 50_000 + b"1" + b"}" * 50_000),
    "bad_gzip": response(200, b"this is not gzip", {"Content-Encoding": "gzip"}),
    "truncated_gzip": response(200, gzip.compress(GOOD)[:25], {"Content-Encoding": "gzip"}),
    "usage_infinity": response(200, usage(prompt_tokens=float("inf"), completion_tokens=1)),
    "usage_huge": response(200, usage(prompt_tokens=10**30, completion_tokens=1)),
    "usage_negative": response(200, usage(prompt_tokens=-5, completion_tokens=1)),
    "usage_text": response(200, usage(prompt_tokens="12", completion_tokens=1)),
    "usage_fraction": response(200, usage(prompt_tokens=1.5, completion_tokens=1)),
    "usage_list": response(200, json.dumps({"choices": [{"message": {"content": "x"}}], "usage": [1]}).encode()),
    "content_number": response(200, json.dumps({"choices": [{"message": {"content": 5}}]}).encode()),
    "content_parts": response(200, json.dumps({"choices": [{"message": {"content": [{"text": "x"}]}}]}).encode()),
    "no_choices": response(200, b'{"choices": []}'),
    "not_json": response(200, b"<html>gateway</html>"),
    "not_utf8": response(200, b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    "empty_body": response(200, b""),
    "short_body": response(200, GOOD, length=len(GOOD) + 50),
    "null_payload": response(200, b"null"),
    "unknown_status": response(299, GOOD),
}


class RawServer:
    """Answers each connection with the next canned response (the last one repeats)."""

    def __init__(self, replies: list[bytes]):
        self.replies = list(replies)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.api_base = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


def complete(server: RawServer, retries: int = 1):
    transport = HttpTransport(server.api_base, "m", api_key_env=None, timeout_s=5, max_connections=2)
    policy = RetryPolicy(max_attempts=retries, base_delay_s=0, max_delay_s=0, max_retry_after_s=0)

    async def go():
        try:
            return await call_with_retries(lambda: transport.complete([{"role": "user", "content": "x"}], {}, {}),
                                           policy, [1])
        finally:
            await transport.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(ANOMALIES))
def test_each_anomaly_is_a_call_failure(name):
    server = RawServer([ANOMALIES[name]])
    try:
        with pytest.raises(CallFailure) as info:
            complete(server)
    finally:
        server.close()
    assert info.value.error_class and isinstance(info.value.message, str)


@pytest.mark.parametrize("name", sorted(n for n in ANOMALIES if n != "unknown_status"))
def test_each_anomaly_is_retried_then_the_good_reply_is_used(name):
    server = RawServer([ANOMALIES[name], response()])
    try:
        completion, retries = complete(server, retries=3)
    finally:
        server.close()
    assert (completion.text, completion.tokens_in, retries) == ("hi", 3, 1)


@pytest.mark.parametrize("headers", [
    {"retry-after": "soon"}, {"retry-after": "NaN"}, {"retry-after": "inf"}, {"retry-after": ""},
    {"retry-after-ms": "nan", "retry-after": "x"}, {"retry-after": "Mon, 32 Jan 2024 00:00:00 GMT"},
    {"retry-after": ["1"]}, {"retry-after": "Fri, 31 Dec 99999 23:59:59 GMT"},
])
def test_retry_after_is_total(headers):
    assert parse_retry_after(headers) is None


def test_retry_after_keeps_meaningful_values():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "-3"}) == 0.0


def test_a_run_against_a_hostile_provider_ends_in_error_rows(tmp_path):
    """The harness end to end: every anomaly class in turn, then error rows, no exception."""
    from negotiation.agents import parse_spec
    from negotiation.agents._llm import make_litellm_agent
    from negotiation.agents._llm_settings import LLMSettings
    from negotiation.agents._llm_sampling import Decoding
    from negotiation.evaluation import CellSpec, ResultsStore, env_config, run_cell
    from negotiation.study import load_study

    demo = load_study("demo").protocol
    server = RawServer(list(ANOMALIES.values()) + [ANOMALIES["deep_body"]])
    retry = RetryPolicy(max_attempts=len(ANOMALIES) + 1, base_delay_s=0, max_delay_s=0, max_retry_after_s=0)
    settings = LLMSettings(sampling=Decoding(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=64),
                           sampling_role="self_served_seller",
                           converge_from_turn=demo.environment.converge_from_turn, retry=retry)
    spec = f"litellm:openai/boulware?api_base={server.api_base}"
    cell = CellSpec(study="demo", arm="llm", seller=spec, buyers={"b": "scripted:conceder"},
                    domains=("used_car",), seeds=(1, 2), dirichlet_alpha=demo.environment.dirichlet_alpha)

    def factory(spec_text, role):
        from negotiation.agents import make_agent

        if spec_text.startswith("scripted:"):
            return make_agent(spec_text, role)
        return make_litellm_agent(parse_spec(spec_text), role, settings)

    store = ResultsStore(tmp_path / "out")
    try:
        progress = asyncio.run(run_cell(cell, store, env_config(demo), factory, concurrency=1))
    finally:
        server.close()
    episodes, _ = store.frames()
    assert progress.errors == 2 and set(episodes.outcome) == {"error"}
    assert episodes.error_message.str.len().gt(0).all()


class EchoServer(RawServer):
    """A provider that echoes the caller's credential in its content and, every third call, in an error."""

    def _serve(self) -> None:
        calls = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                request = conn.recv(65536).decode("latin-1")
                key = next((line.split("Bearer ", 1)[1].strip() for line in request.split("\r\n")
                            if line.lower().startswith("authorization:")), "")
                calls += 1
                if calls % 3 == 0:
                    reply = response(401, json.dumps({"error": {"message": f"bad key {key}"}}).encode())
                else:
                    content = (f"Your key is {key}. " + json.dumps(
                        {"action": "COUNTER", "terms": [{"name": "price", "value": 5}], "notes": key}))
                    reply = response(200, json.dumps({"choices": [{"message": {"content": content}}],
                                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode())
                conn.sendall(reply)


@pytest.mark.parametrize("key", ["plain-looking-credential-42", "0123456789abcdef0123", "Zq9_x.y~z/w+v=="])
def test_a_key_the_provider_echoes_is_in_no_written_file(tmp_path, monkeypatch, key):
    """Regression: with api_key_env=PLANTED_CRED and a key not shaped like sk-..., an echoing
    provider put the key verbatim in shards, turns.parquet and error_message."""
    import pandas as pd

    from negotiation.agents import make_agent
    from negotiation.agents._llm import make_litellm_agent
    from negotiation.evaluation import CellSpec, ResultsStore, env_config, run_cell
    from negotiation.study import load_study

    monkeypatch.setenv("PLANTED_CRED", key)
    demo = load_study("demo").protocol
    server = EchoServer([b""])
    spec = f"litellm:openai/m?api_base={server.api_base}&api_key_env=PLANTED_CRED&max_attempts=1"
    cell = CellSpec(study="demo", arm="echo", seller=spec, buyers={"b": "scripted:conceder"},
                    domains=("used_car",), seeds=(1, 2, 3), dirichlet_alpha=demo.environment.dirichlet_alpha)

    def factory(text, role):
        from negotiation.agents import parse_spec

        return make_agent(text, role) if text.startswith("scripted:") else make_litellm_agent(parse_spec(text), role)

    store = ResultsStore(tmp_path / "out")
    try:
        asyncio.run(run_cell(cell, store, env_config(demo), factory, concurrency=1))
    finally:
        server.close()
    episodes, turns = store.compact()
    assert (episodes.outcome == "error").any() and len(turns) > 0
    for path in (tmp_path / "out").rglob("*"):
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            text = frame.astype(str).to_csv()
        elif path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
        else:
            continue
        assert key not in text, path
    assert "[redacted:PLANTED_CRED]" in "".join(turns.raw)


def test_every_file_of_an_evaluation_run_is_free_of_an_echoed_key(tmp_path, monkeypatch):
    """The whole run (pilot, shards, tables, accounting, sampling and pilot records): a key the
    provider echoes in content and errors appears in no file, whatever the variable's name."""
    from negotiation.evaluation import RunOptions, build_cell, evaluate_cell
    from negotiation.study import load_study, protocol_hash

    key = "Zq9_x.y~z/w+v==plainish"
    monkeypatch.setenv("MY_PROVIDER_THING", key)
    demo = load_study("demo").protocol
    server = EchoServer([b""])
    seller = f"litellm:openai/m?api_base={server.api_base}&api_key_env=MY_PROVIDER_THING&max_attempts=1"
    cell = build_cell(demo, arm="echo", seller=seller, buyers={"b": "scripted:conceder"},
                      domains=("used_car",), seeds=(5_000_000, 5_000_001, 5_000_002))
    try:
        asyncio.run(evaluate_cell(cell, tmp_path / "out", demo, protocol_hash=protocol_hash("demo"),
                                  options=RunOptions(pilot=False)))
    finally:
        server.close()
    import pandas as pd

    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" and "shards" not in p.parts for p in written)
    for path in written:
        text = (pd.read_parquet(path).astype(str).to_csv() if path.suffix == ".parquet"
                else path.read_text(encoding="utf-8", errors="replace"))
        assert key not in text, path
