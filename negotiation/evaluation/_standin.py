"""A local OpenAI-compatible stand-in server whose replies come from scripted agents.

``POST /v1/chat/completions`` reads the rendered evaluation prompt back into a ``View``
(``_standin_prompt``) and answers with the scripted persona named by the request's ``model``
(``boulware``, ``conceder``, ``linear``, ``titfortat``, ``fixed``), seeded by the request's
``seed``. The reply depends on the prompt and the seed only, never on call order, so a run
with injected faults plays exactly the episodes of a fault-free run.

Fault injection (``Faults``): transient faults (429 with ``Retry-After``, 500, a stalled
request the client times out on, a dropped connection, a malformed body) hit a fraction
``error_rate`` of requests, drawn from a seeded generator; permanent 400s hit the fraction
``bad_request_rate`` of requests chosen by a hash of the request body (so a retried request
fails again); ``reject_params`` answers 400 naming a parameter, as providers that refuse a
temperature do. ``echo_auth`` copies the request's credentials into error bodies, to prove
the harness never writes them.

The server is a small HTTP/1.1 implementation on asyncio streams (keep-alive, Content-Length
bodies), which keeps it dependency-free and fast enough for 64 concurrent clients.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents import make_agent
from negotiation.errors import ConfigError
from negotiation.evaluation._standin_prompt import PromptReadError, read_view

FaultKind = Literal["429", "500", "timeout", "drop", "malformed"]
FAULT_KINDS: tuple[FaultKind, ...] = ("429", "500", "timeout", "drop", "malformed")
PERSONAS = ("boulware", "conceder", "linear", "titfortat", "fixed")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error"}


class Faults(BaseModel):
    """Fault-injection knobs of the stand-in server."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    error_rate: float = Field(default=0.0, ge=0, le=1)
    """Fraction of chat requests that get a transient fault."""
    kinds: tuple[FaultKind, ...] = Field(default=FAULT_KINDS, min_length=1)
    """Transient fault kinds, drawn uniformly for a faulted request."""
    retry_after_s: float = Field(default=0.0, ge=0)
    """``Retry-After`` (seconds) sent with a 429."""
    hang_s: float = Field(default=30.0, ge=0)
    """How long a ``timeout`` fault stalls before closing the connection."""
    latency_s: float = Field(default=0.0, ge=0)
    """Delay before every successful reply (a model's generation time)."""
    bad_request_rate: float = Field(default=0.0, ge=0, le=1)
    """Fraction of requests answered with a permanent 400, chosen by a hash of the body."""
    reject_params: tuple[str, ...] = ()
    """Request parameters answered with a 400 that names them (e.g. ``temperature``)."""
    echo_auth: bool = False
    """Copy the request's ``Authorization`` header into error bodies (a leaky provider)."""
    seed: int = 0
    """Seed of the generator that draws transient faults."""


class StandinConfig(BaseModel):
    """How the stand-in server runs."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Config format version."""
    host: str = "127.0.0.1"
    """Interface to bind (local only by default)."""
    port: int = Field(default=0, ge=0, le=65535)
    """Port; 0 picks a free one."""
    max_turns: int = Field(gt=0)
    """Horizon the scripted agents assume (``2 T`` of the protocol; prompts never state it)."""
    faults: Faults = Faults()
    """Fault injection."""


class _Handler:
    """State shared by all connections: agents per (model, role), the fault generator, counters."""

    def __init__(self, config: StandinConfig):
        self.config = config
        self.faults = config.faults
        self.rng = np.random.default_rng(config.faults.seed)
        self.agents: dict[tuple[str, str], Any] = {}
        self.counts: dict[str, int] = {"requests": 0, "ok": 0, **{k: 0 for k in FAULT_KINDS}, "400": 0}

    def agent(self, model: str, role: str) -> Any:
        key = (model, role)
        if key not in self.agents:
            self.agents[key] = make_agent(f"scripted:{model}", role)  # type: ignore[arg-type]
        return self.agents[key]

    def error(self, status: int, message: str, auth: str, kind: str = "invalid_request_error",
              param: str | None = None) -> tuple[int, dict[str, str], bytes]:
        if self.faults.echo_auth and auth:
            message = f"{message} (credentials received: {auth})"
        body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
        return status, {}, json.dumps(body).encode()

    def transient(self) -> str | None:
        if self.faults.error_rate and self.rng.random() < self.faults.error_rate:
            return str(self.rng.choice(list(self.faults.kinds)))
        return None

    def permanent(self, body: bytes) -> bool:
        rate = self.faults.bad_request_rate
        if not rate:
            return False
        h = int.from_bytes(hashlib.sha256(body).digest()[:8], "big") / 2**64
        return h < rate

    def complete(self, request: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        model = str(request.get("model", ""))
        rejected = [p for p in self.faults.reject_params if p in request]
        if rejected:
            return self.error(400, f"Unsupported parameter: '{rejected[0]}' is not supported with this model.",
                              auth, param=rejected[0])
        if model not in PERSONAS:
            return self.error(404, f"The model '{model}' does not exist; known: {', '.join(PERSONAS)}", auth,
                              kind="not_found_error")
        try:
            view = read_view(request.get("messages") or [], sample_seed=int(request.get("seed") or 0),
                             max_turns=self.config.max_turns)
        except (PromptReadError, ValueError, TypeError) as exc:
            return self.error(400, f"cannot read the prompt: {exc}", auth)
        text = self.agent(model, view.role).respond(view).text
        chars_in = sum(len(str(m.get("content", ""))) for m in request.get("messages") or [])
        usage = {"prompt_tokens": -(-chars_in // 4), "completion_tokens": -(-len(text) // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        body = {"id": "standin", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage}
        return 200, {}, json.dumps(body).encode()


def _response(status: int, headers: dict[str, str], body: bytes) -> bytes:
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: keep-alive", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body


async def _serve_chat(h: _Handler, body: bytes, auth: str, writer: asyncio.StreamWriter) -> bool:
    """Answer one chat request; False when the connection must close (a fault)."""
    h.counts["requests"] += 1
    fault = h.transient()
    if fault == "drop":
        h.counts["drop"] += 1
        return False
    if fault == "timeout":
        h.counts["timeout"] += 1
        await asyncio.sleep(h.faults.hang_s)
        return False
    if fault == "429":
        h.counts["429"] += 1
        status, headers, payload = h.error(429, "Rate limit reached; retry later.", auth, kind="rate_limit_error")
        headers = {"Retry-After": f"{h.faults.retry_after_s:g}"}
    elif fault == "500":
        h.counts["500"] += 1
        status, headers, payload = h.error(500, "The server had an error processing the request.", auth,
                                           kind="server_error")
    elif h.permanent(body):
        h.counts["400"] += 1
        status, headers, payload = h.error(400, "Invalid request (injected permanent fault).", auth)
    else:
        try:
            request = json.loads(body)
        except json.JSONDecodeError as exc:
            request, (status, headers, payload) = None, h.error(400, f"body is not JSON: {exc}", auth)
        if request is not None:
            status, headers, payload = h.complete(request, auth)
        if status == 200 and fault == "malformed":
            h.counts["malformed"] += 1
            payload = payload[: len(payload) // 2]
        elif status == 200:
            h.counts["ok"] += 1
            if h.faults.latency_s:
                await asyncio.sleep(h.faults.latency_s)
    writer.write(_response(status, headers, payload))
    await writer.drain()
    return True


async def _connection(h: _Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            method, path, headers, body = await _read_request(reader)
            auth = headers.get("authorization", "")
            if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                if not await _serve_chat(h, body, auth, writer):
                    break
                continue
            if method == "GET" and path in ("/health", "/v1/health"):
                writer.write(_response(200, {}, b"{}"))
            elif method == "GET" and path.rstrip("/").endswith("/models"):
                data = [{"id": p, "object": "model"} for p in PERSONAS]
                writer.write(_response(200, {}, json.dumps({"object": "list", "data": data}).encode()))
            else:
                writer.write(_response(404, {}, b'{"error": {"message": "no such route"}}'))
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass  # the client went away or sent something that is not HTTP: close the connection
    except asyncio.CancelledError:
        # Server shutdown. The handler is the task's top level, so ending normally is safe, and it
        # avoids Python 3.11's stream callback logging a spurious traceback for a cancelled task.
        pass
    finally:
        writer.close()


class StandinServer:
    """The stand-in server on a background thread (tests, benchmark) or in the foreground (CLI)."""

    def __init__(self, config: StandinConfig):
        self.config = config
        self.handler = _Handler(config)
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def api_base(self) -> str:
        return f"http://{self.config.host}:{self.port}/v1"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(
            lambda r, w: _connection(self.handler, r, w), self.config.host, self.config.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        """Run in the current event loop until cancelled."""
        await self._start()
        async with self._server:  # type: ignore[union-attr]
            await self._server.serve_forever()  # type: ignore[union-attr]

    def start(self) -> StandinServer:
        """Start on a daemon thread; returns once the port is bound."""
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self._start())
            except OSError as exc:
                errors.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, name="standin-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise ConfigError(f"stand-in server:port: cannot bind {self.config.host}:{self.config.port} ({errors[0]})")
        return self

    async def _shutdown(self) -> None:
        self._server.close()  # type: ignore[union-attr]
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        asyncio.get_running_loop().stop()

    def stop(self) -> None:
        """Stop the background server, closing open connections."""
        if self._loop is None or self._server is None or self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
