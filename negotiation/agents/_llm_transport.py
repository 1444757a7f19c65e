"""How a chat request reaches a model: direct OpenAI-compatible HTTP, or litellm.

``HttpTransport`` posts to ``<api_base>/chat/completions`` with httpx. It serves vLLM servers
and the stand-in: litellm adds nothing there but per-call overhead (about 0.6x the raw
client's throughput on the harness benchmark). ``LitellmTransport`` serves every other
provider (Anthropic, OpenAI, Gemini, ...) through ``litellm.acompletion``, imported lazily.

Both turn every failure into a ``CallFailure`` that says whether it is transient (429, 5xx,
timeouts, dropped connections, malformed bodies: retried) or permanent (bad request, auth,
unknown model: an error row), with the ``Retry-After`` a 429 carried.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any

import httpx

from negotiation.agents._llm_secrets import redact

_STATUS_CLASS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 408: "Timeout", 409: "ConflictError", 422: "UnprocessableEntityError",
                 429: "RateLimitError", 500: "InternalServerError", 502: "BadGatewayError",
                 503: "ServiceUnavailableError", 504: "Timeout"}
_TRANSIENT_STATUS = {408, 409, 429}
_REPLY_ERRORS = (RecursionError, OverflowError, UnicodeError, json.JSONDecodeError)
_LITELLM_TRANSIENT = ("RateLimitError", "Timeout", "APIConnectionError", "InternalServerError",
                      "ServiceUnavailableError", "BadGatewayError", "APIResponseValidationError")


CONTEXT_OVERFLOW = "ContextWindowExceededError"
"""Error class of a request whose prompt plus token cap outgrows the model's context."""
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(length|window|size|limit)"  # vLLM, OpenAI ("maximum context length", context_length_exceeded)
    r"|prompt is too long|input is too long|input token count.{0,40}exceeds"  # Anthropic, TGI, Gemini
    r"|(exceeds?|longer than|more than) (the )?(model'?s? )?(maximum )?(context|input|sequence)",
    re.IGNORECASE)


def is_context_overflow(message: str) -> bool:
    """Whether a provider's error message says the request does not fit the model's context.

    Read by meaning, not by the parameter it names: vLLM's 400 reads "'max_tokens' ... is too
    large: 768. This model's maximum context length is 2048 tokens ..." with ``param:
    max_tokens``, which is no refused parameter (dropping the cap would resend the same
    overflowing request, uncapped).
    """
    return bool(_CONTEXT_OVERFLOW.search(message))


@dataclass(frozen=True)
class Completion:
    """One model reply and its token counts."""

    text: str
    tokens_in: int
    tokens_out: int
    empty: str = ""
    """``provider_empty:<reason>`` when the provider sent no text and said why (or sent null),
    else empty: see ``empty_reason``."""


class CallFailure(Exception):
    """A failed request: class name, message (redacted), transient or not, ``Retry-After``."""

    def __init__(self, error_class: str, message: str, *, transient: bool, retry_after: float | None = None,
                 status: int | None = None, param: str | None = None):
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = redact(message)
        self.transient = transient
        self.retry_after = retry_after
        self.status = status
        self.param = param


def _seconds(value: Any) -> float | None:
    """A finite, non-negative number of seconds from a header value, else ``None``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    Total over whatever a server sends: a value that is neither (``soon``, ``NaN``, a date that
    does not exist, a list) is no hint at all, so the ordinary backoff applies.
    """
    if not headers:
        return None
    try:
        ms, value = headers.get("retry-after-ms"), headers.get("retry-after")
    except (AttributeError, TypeError, ValueError, UnicodeError):
        return None
    if ms is not None and (seconds := _seconds(ms)) is not None:
        return seconds / 1000.0
    if value is None:
        return None
    if (seconds := _seconds(value)) is not None:
        return seconds
    try:
        parsed = email.utils.parsedate_to_datetime(value)
        return _seconds(parsed.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError, IndexError, AttributeError):
        return None


def failure_from_status(status: int, body: str, headers: Any) -> CallFailure:
    """Classify an HTTP error response."""
    body = redact(body)  # before any cut: a key straddling the cut would leave its first half behind
    message, param = body[:500], None
    try:
        err = json.loads(body).get("error", {}) if len(body) < 100_000 else None
        if isinstance(err, dict):
            message = str(err.get("message") or message)[:2000]
            param = err.get("param") if isinstance(err.get("param"), str) else None
    except (ValueError, AttributeError, RecursionError):
        pass  # the raw body's start is the message
    error_class = _STATUS_CLASS.get(status, "InternalServerError" if status >= 500 else "APIError")
    if status in (400, 413, 422) and is_context_overflow(message):
        error_class = CONTEXT_OVERFLOW
    transient = status >= 500 or status in _TRANSIENT_STATUS
    return CallFailure(error_class, f"HTTP {status}: {message}", transient=transient,
                       retry_after=parse_retry_after(headers), status=status, param=param)


DEADLINE_FACTOR = 2.0
"""A request's whole deadline in units of its per-read timeout (``RetryPolicy.timeout_s``)."""
DEFAULT_MAX_REPLY_BYTES = 8 * 2**20
"""Largest reply body ``HttpTransport`` reads unless told otherwise (``RetryPolicy.max_reply_bytes``)."""

MAX_TOKENS_REPORTED = 10**9
"""Largest token count a reply's ``usage`` may report; more is a malformed reply."""


def _token_count(usage: dict, field: str) -> int:
    value = usage.get(field) or 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_REPORTED:
        raise ValueError(f"usage.{field} = {str(value)[:40]!r} is not a token count")
    return value


def parse_completion(payload: Any) -> Completion:
    """Text and usage of a chat-completion body; ``MalformedResponse`` when it is not one.

    Validated here, at the boundary, so that nothing odd reaches the records: the content must
    be text (or null), token counts whole numbers in ``[0, MAX_TOKENS_REPORTED]``.
    """
    try:
        choice = payload["choices"][0]
        text = choice["message"].get("content") or ""
        if not isinstance(text, str):
            raise TypeError(f"message content is a {type(text).__name__}, not text")
        usage = payload.get("usage") or {}
        if not isinstance(usage, dict):
            raise TypeError(f"usage is a {type(usage).__name__}")
        return Completion(text, _token_count(usage, "prompt_tokens"), _token_count(usage, "completion_tokens"),
                          "" if text else empty_reason(choice))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError) as exc:
        raise CallFailure("MalformedResponse", f"not a chat completion ({type(exc).__name__}: {exc})",
                          transient=True) from exc


PROVIDER_EMPTY = "provider_empty"
"""Prefix of ``Completion.empty`` and of the turn record's ``error`` when the provider sent no text."""


def empty_reason(choice: dict) -> str:
    """``provider_empty:<reason>`` for a choice whose message has no text, or ``""`` when the
    empty text is the model's own answer (``content: ""`` ending normally).

    The reason: ``tool_call`` (the provider answered with a tool call), ``refusal`` (a refusal
    field), else the ``finish_reason`` (``length``: the token cap ran out first, for example in
    a reasoning block; ``content_filter``), else ``null_content``.
    """
    message = choice.get("message") or {}
    finish = choice.get("finish_reason")
    if message.get("tool_calls") or message.get("function_call") or finish in ("tool_calls", "function_call"):
        reason = "tool_call"
    elif message.get("refusal"):
        reason = "refusal"
    elif isinstance(finish, str) and finish not in ("stop", "eos", ""):
        reason = "".join(c if c.isalnum() or c == "_" else "_" for c in finish[:40])
    elif message.get("content") is None:
        reason = "null_content"
    else:
        return ""
    return f"{PROVIDER_EMPTY}:{reason}"


# One pooled client per (event loop, endpoint, credential variable): agents that talk to the same
# endpoint (a self-play cell's seller and buyer) share connections instead of doubling the pool,
# which httpx scans on every request.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None], httpx.AsyncClient]] = \
    weakref.WeakKeyDictionary()


class HttpTransport:
    """Direct OpenAI-compatible chat completions over httpx."""

    name = "http"

    def __init__(self, api_base: str, model: str, *, api_key_env: str | None, timeout_s: float,
                 max_connections: int, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES):
        self.api_base = api_base.rstrip("/")
        self.url = self.api_base + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.max_reply_bytes = max_reply_bytes

    def _client(self) -> httpx.AsyncClient:
        per_loop = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
        key = (self.api_base, self.api_key_env)
        client = per_loop.get(key)
        if client is None or client.is_closed:
            headers = {}
            if self.api_key_env:
                # Read at call time from the environment only; never stored on disk or in specs.
                headers["Authorization"] = f"Bearer {os.environ.get(self.api_key_env, '')}"
            limits = httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections)
            client = httpx.AsyncClient(headers=headers, limits=limits, timeout=httpx.Timeout(self.timeout_s))
            per_loop[key] = client
        return client

    async def complete(self, messages: list[dict[str, str]], params: dict[str, Any],
                       extra_body: dict[str, Any]) -> Completion:
        body = {"model": self.model, "messages": messages, **params, **extra_body}
        try:
            # A deadline for the whole exchange besides httpx's per-read timeout: a server that sends a
            # byte at a time would otherwise hold the call for as long as it likes.
            async with asyncio.timeout(DEADLINE_FACTOR * self.timeout_s):
                status, headers, content = await self._exchange(body)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise CallFailure("Timeout", f"no reply within {self.timeout_s} s a read, "
                              f"{DEADLINE_FACTOR * self.timeout_s} s in all ({type(exc).__name__})",
                              transient=True) from exc
        except httpx.DecodingError as exc:  # e.g. a body that is not the gzip its header says
            raise CallFailure("MalformedResponse", f"{type(exc).__name__}: {exc}", transient=True) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise CallFailure("APIConnectionError", f"{type(exc).__name__}: {exc}", transient=False) from exc
        except (httpx.RequestError, httpx.StreamError) as exc:
            raise CallFailure("APIConnectionError", f"{type(exc).__name__}: {exc}", transient=True) from exc
        return _completion_of(status, headers, content)

    async def _exchange(self, body: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """Send ``body``; read the reply up to ``max_reply_bytes`` (a longer one: ``ReplyTooLarge``,
        permanent, as the same request would fetch the same runaway body and pay for it again)."""
        async with self._client().stream("POST", self.url, json=body) as response:
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise CallFailure("ReplyTooLarge", f"HTTP {response.status_code}: reply body over "
                                      f"{self.max_reply_bytes} bytes; read no further", transient=False,
                                      status=response.status_code)
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)

    async def aclose(self) -> None:
        client = _CLIENTS.get(asyncio.get_running_loop(), {}).pop((self.api_base, self.api_key_env), None)
        if client is not None:
            await client.aclose()


def _completion_of(status: int, headers: httpx.Headers, content: bytes) -> Completion:
    """The completion in an HTTP reply (status, headers, body), or the ``CallFailure`` it amounts to."""
    try:
        if status != 200:
            raise failure_from_status(status, content.decode("utf-8", errors="replace"), headers)
        payload = json.loads(content)
    except CallFailure:
        raise
    except (ValueError, RecursionError, UnicodeError) as exc:  # not JSON, or nested beyond reason
        raise CallFailure("MalformedResponse", f"body is not usable JSON ({type(exc).__name__})",
                          transient=True) from exc
    return parse_completion(payload)


def _litellm() -> Any:
    import litellm  # lazy: importing litellm takes seconds and is an optional extra

    litellm.suppress_debug_info = True
    return litellm


class LitellmTransport:
    """Any provider through ``litellm.acompletion``; litellm's own retries are off (ours count)."""

    name = "litellm"

    def __init__(self, model: str, *, api_base: str | None, api_key_env: str | None, timeout_s: float):
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s

    def supported_params(self) -> frozenset[str] | None:
        lib = _litellm()
        _, provider, _, _ = lib.get_llm_provider(self.model)
        found = lib.get_supported_openai_params(model=self.model, custom_llm_provider=provider)
        return frozenset(found) if found else None

    async def complete(self, messages: list[dict[str, str]], params: dict[str, Any],
                       extra_body: dict[str, Any]) -> Completion:
        lib = _litellm()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": self.timeout_s,
                                  "num_retries": 0, "max_retries": 0, **params}
        if extra_body:
            kwargs["extra_body"] = extra_body
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key_env:
            kwargs["api_key"] = os.environ.get(self.api_key_env, "")
        elif self.api_base and self.model.split("/", 1)[0] in ("openai", "hosted_vllm"):
            # An OpenAI-compatible endpoint of our own: never let litellm send the user's OpenAI key
            # there; the placeholder satisfies the client (vLLM's convention).
            kwargs["api_key"] = "EMPTY"
        try:
            async with asyncio.timeout(DEADLINE_FACTOR * self.timeout_s):  # litellm's timeout is per read
                response = await lib.acompletion(**kwargs)
            payload = response.model_dump() if hasattr(response, "model_dump") else response
        except TimeoutError as exc:
            raise CallFailure("Timeout", f"no whole reply within {DEADLINE_FACTOR * self.timeout_s} s",
                              transient=True) from exc
        except _REPLY_ERRORS as exc:  # the client choked on what the provider sent
            raise CallFailure("MalformedResponse", f"{type(exc).__name__} reading the reply",
                              transient=True) from exc
        except Exception as exc:  # noqa: BLE001 - filtered: only provider errors become failures
            if not type(exc).__module__.split(".")[0] in ("litellm", "openai", "httpx", "aiohttp"):
                raise
            raise _failure_from_litellm(exc) from exc
        return parse_completion(payload)


def _failure_from_litellm(exc: BaseException) -> CallFailure:
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(exc, "litellm_response_headers", None) or getattr(response, "headers", None)
    transient = name in _LITELLM_TRANSIENT or (isinstance(status, int) and status >= 500)
    message = str(getattr(exc, "message", None) or exc)
    if name != CONTEXT_OVERFLOW and not transient and is_context_overflow(message):
        name = CONTEXT_OVERFLOW  # litellm maps only some providers' overflows to its own class
    return CallFailure(name, message, transient=transient, retry_after=parse_retry_after(headers),
                       status=status if isinstance(status, int) else None, param=None)
