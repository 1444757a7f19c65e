"""Chat-model agents behind a transport: ``litellm:<provider/model>``, and the ``LLMAgent`` that
``vllm:<checkpoint>`` (``_llm_vllm``) also talks to; ``hf:<model dir>`` lives in ``_llm_hf``.
Settings and spec options shared by the three kinds are in ``_llm_settings``.

An ``LLMAgent`` renders its role's prompt from the view (``negotiation.env._prompts``), sends it
with the protocol's sampling settings, retries transient failures, and returns a ``Reply``
with tokens, cost, latency and retries. Spec options (``?key=value&...``):

- ``api_base``: an OpenAI-compatible endpoint (vLLM, the stand-in). ``openai/`` and
  ``hosted_vllm/`` models with an ``api_base`` go over direct HTTP (``transport=litellm``
  forces litellm); every other model goes through litellm.
- ``api_key_env``: the environment variable holding the key (never the key itself).
- ``study`` (default ``paper``) and ``sampling`` (``self_served_seller``, ``reference_seller``,
  ``buyer``; default by kind and role): where the protocol settings come from when the caller
  passes none; ``temperature``, ``top_p``, ``top_k``, ``max_tokens``, ``thinking`` override
  them (with a warning at start).
- ``prompt`` (``evaluation`` | ``training``), ``timeout``, ``max_attempts``,
  ``max_concurrency`` (bound per endpoint), ``seed`` (``false``: send no per-turn seed),
  ``usd_per_mtok_in`` / ``usd_per_mtok_out`` (price when litellm's map has none).
"""

from __future__ import annotations

import asyncio
import re
import time
import warnings
from typing import Any

from negotiation.agents._llm_price import Price, price_for
from negotiation.agents._llm_ratelimit import estimate_tokens, provider_limiter
from negotiation.agents._llm_retry import AgentCallError, call_with_retries, endpoint_semaphore
from negotiation.agents._llm_sampling import (
    Decoding,
    SamplingDriftWarning,
    SamplingLog,
    plan_sampling,
    warn_drift,
)
from negotiation.agents._llm_settings import (
    LLM_OPTIONS,
    LLMSettings,
    resolve_settings,
    spec_sampling_overrides,
    turn_seed,
)
from negotiation.agents._llm_secrets import forbid_inline_secrets, register_secret_env
from negotiation.agents._llm_transport import (
    CONTEXT_OVERFLOW,
    CallFailure,
    Completion,
    HttpTransport,
    LitellmTransport,
    is_context_overflow,
)
from negotiation.agents._spec import AgentSpec
from negotiation.env import PROMPT_TEMPLATES, Reply, Role, View, render_messages
from negotiation.errors import ConfigError

_HTTP_PROVIDERS = ("openai", "hosted_vllm")
EMPTY_ATTEMPTS = 3
"""Attempts (the first included, within ``RetryPolicy.max_attempts``) at a turn the provider
answers with no text (``Completion.empty``); the last such reply is played as the empty move,
its turn record saying ``provider_empty:<reason>``."""


class LLMAgent:
    """A chat model behind a transport; one instance serves every episode of a cell."""

    blocking = False

    def __init__(self, spec: str, role: Role, transport: Any, settings: LLMSettings, *, sending: Decoding,
                 provider: str, openai_compatible: bool, supported: frozenset[str] | None,
                 price: Price | None, endpoint: str, send_seed: bool):
        self.spec, self.role, self.transport, self.settings = spec, role, transport, settings
        self.template = PROMPT_TEMPLATES[settings.prompt]
        self.price, self.endpoint, self.send_seed = price, endpoint, send_seed
        self.params, self.extra, not_sent = plan_sampling(settings.sampling, sending, provider=provider,
                                                          openai_compatible=openai_compatible, supported=supported)
        sent = {**self.params, **self.extra}
        if "chat_template_kwargs" in sent:
            sent["thinking"] = sent.pop("chat_template_kwargs")["enable_thinking"]
        if send_seed:
            sent["seed"] = "per-turn"
        self.record = SamplingLog(agent=spec, role=role, sampling_role=settings.sampling_role, provider=provider,
                                     transport=transport.name, requested=settings.sampling.sent_values(),
                                     sent=sent, not_sent=not_sent)
        self.drift = warn_drift(self.record)
        self.server: Any = None
        self.calls_ok = 0
        """Successful calls so far (the sampling record's ``accepted`` needs at least one)."""

    @property
    def prompt_hash(self) -> str:
        return self.template.hash

    def _drop_refused(self, failure: CallFailure) -> bool:
        """Fallback when the provider refuses a parameter: drop it, record it, repeat the call."""
        if failure.transient or failure.status not in (400, 422, None) or failure.error_class == "Timeout":
            return False
        if failure.error_class == CONTEXT_OVERFLOW or is_context_overflow(failure.message):
            return False  # names max_tokens, but no parameter is refused: the prompt outgrew the context
        keys = [k for k in self.record.sent if k not in self.record.rejected]
        text = failure.message.lower()
        hit = failure.param if failure.param in keys else next((k for k in keys if k in text), None)
        if hit is None and "chat_template_kwargs" in text and "thinking" in keys:
            hit = "thinking"
        if hit is None:
            return False
        self.params.pop(hit, None)
        self.extra.pop("chat_template_kwargs" if hit == "thinking" else hit, None)
        self.record.reject(hit, failure.message)
        warnings.warn(f"{self.spec} ({self.role}): the provider refused {hit}; sending without it "
                      f"({failure.message[:120]})", SamplingDriftWarning, stacklevel=2)
        return True

    async def arespond(self, view: View) -> Reply:
        messages = render_messages(view, self.template, converge_from_turn=self.settings.converge_from_turn)
        seed = turn_seed(view.sample_seed, view.turn, view.role)

        limiter = provider_limiter(self.endpoint)
        empties: list[Completion] = []

        async def call() -> Any:
            params = dict(self.params)
            if self.send_seed and "seed" not in self.record.rejected:
                params["seed"] = seed
            if limiter is None:
                completion = await self.transport.complete(messages, params, self.extra)
            else:
                estimate = estimate_tokens(messages, params.get("max_tokens"))
                await limiter.acquire(estimate)  # every attempt is a request to the provider
                completion = await self.transport.complete(messages, params, self.extra)
                limiter.settle(estimate, completion.tokens_in + completion.tokens_out)
            if completion.empty and len(empties) + 1 < EMPTY_ATTEMPTS:
                empties.append(completion)
                raise CallFailure("ProviderEmpty", completion.empty, transient=True)
            return completion

        jitter = (int(view.sample_seed), int(view.turn), 0 if view.role == "seller" else 1)
        semaphore = endpoint_semaphore(self.endpoint, self.settings.max_concurrency)
        start = time.perf_counter()
        try:
            completion, retries = await call_with_retries(call, self.settings.retry, jitter, semaphore=semaphore,
                                                          on_failure=self._drop_refused)
        except CallFailure as failure:
            if failure.error_class == "ProviderEmpty" and empties:  # attempts ran out on empty replies
                completion, retries = empties[-1], getattr(failure, "retries", 0)
            else:
                raise AgentCallError(failure, retries=getattr(failure, "retries", 0), spec=self.spec,
                                     role=self.role) from failure
        self.calls_ok += 1
        cost = self.price.cost(completion.tokens_in, completion.tokens_out) if self.price else None
        return Reply(completion.text, completion.tokens_in, completion.tokens_out, cost,
                     time.perf_counter() - start, retries, completion.empty)

    def respond(self, view: View) -> Reply:
        """Synchronous use (``run_episode``); the harness awaits ``arespond``."""
        return asyncio.run(self._respond_and_close(view))

    async def _respond_and_close(self, view: View) -> Reply:
        try:
            return await self.arespond(view)
        finally:
            if hasattr(self.transport, "aclose"):
                await self.transport.aclose()

    async def astart(self) -> None:
        """Start what the agent needs (a vLLM server); a no-op otherwise."""
        if self.server is not None:
            await self.server.start()

    async def aclose(self) -> None:
        """Release connections and stop an owned server."""
        if hasattr(self.transport, "aclose"):
            await self.transport.aclose()
        if self.server is not None:
            await self.server.stop()


def build_llm_agent(spec: AgentSpec, role: Role, settings: LLMSettings, *, model: str, api_base: str | None,
                    force_litellm: bool = False) -> LLMAgent:
    """An ``LLMAgent`` for a litellm model name, over HTTP when the endpoint is OpenAI-compatible."""
    forbid_inline_secrets(spec.text, spec.options)
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    api_key_env = spec.option("api_key_env", None)
    if api_key_env is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
            raise ConfigError(f"agent spec {spec.text!r}:api_key_env: expected an environment variable name, "
                              f"got {api_key_env!r}")
        register_secret_env(api_key_env)  # its value is redacted whatever the variable is called
    http = api_base is not None and provider in _HTTP_PROVIDERS and not force_litellm
    if http:
        transport: Any = HttpTransport(api_base, model.split("/", 1)[-1], api_key_env=api_key_env,  # type: ignore[arg-type]
                                       timeout_s=settings.retry.timeout_s, max_connections=settings.max_concurrency,
                                       max_reply_bytes=settings.retry.max_reply_bytes)
        supported = None
    else:
        transport = LitellmTransport(model, api_base=api_base, api_key_env=api_key_env,
                                     timeout_s=settings.retry.timeout_s)
        supported = transport.supported_params()
    sending = settings.sampling.with_overrides(spec_sampling_overrides(spec))
    price = price_for(model, spec.option("usd_per_mtok_in", None, float, lo=0),
                      spec.option("usd_per_mtok_out", None, float, lo=0))
    send_seed = spec.option("seed", "true").lower()
    if send_seed not in ("true", "false"):
        raise ConfigError(f"agent spec {spec.text!r}:seed: expected true or false, got {send_seed!r}")
    send_seed = send_seed == "true"
    return LLMAgent(spec.text, role, transport, settings, sending=sending, provider=provider,
                    openai_compatible=api_base is not None and provider in _HTTP_PROVIDERS,
                    supported=supported, price=price, endpoint=api_base or provider, send_seed=send_seed)


def make_litellm_agent(spec: AgentSpec, role: Role, settings: LLMSettings | None = None) -> LLMAgent:
    """Factory for ``litellm:<provider/model>`` specs."""
    spec.check_known(LLM_OPTIONS)
    transport = spec.option("transport", "auto")
    if transport not in ("auto", "http", "litellm"):
        raise ConfigError(f"agent spec {spec.text!r}:transport: expected auto, http or litellm, got {transport!r}")
    api_base = spec.option("api_base", None)
    if transport == "http" and api_base is None:
        raise ConfigError(f"agent spec {spec.text!r}:api_base: transport=http needs an api_base")
    return build_llm_agent(spec, role, resolve_settings(spec, role, settings), model=spec.target,
                           api_base=api_base, force_litellm=transport == "litellm")
