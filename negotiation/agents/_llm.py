"""LLM agents: ``litellm:<provider/model>``, ``vllm:<checkpoint>``, ``hf:<model dir>``.

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
import hashlib
import re
import time
import warnings
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents._llm_price import Price, price_for
from negotiation.agents._llm_ratelimit import estimate_tokens, provider_limiter
from negotiation.agents._llm_retry import AgentCallError, RetryPolicy, call_with_retries, endpoint_semaphore
from negotiation.agents._llm_sampling import (
    Sampling,
    SamplingDriftWarning,
    SamplingRecord,
    SamplingRole,
    plan_sampling,
    warn_drift,
)
from negotiation.agents._llm_secrets import forbid_inline_secrets, register_secret_env
from negotiation.agents._llm_transport import CallFailure, HttpTransport, LitellmTransport
from negotiation.agents._spec import AgentSpec
from negotiation.env import PROMPT_TEMPLATES, Reply, Role, View, render_messages
from negotiation.env._prompts import PromptVariant
from negotiation.errors import ConfigError

_HTTP_PROVIDERS = ("openai", "hosted_vllm")
_SAMPLING_CASTS = {"temperature": float, "top_p": float, "top_k": int, "max_tokens": int}
_SETTINGS_OPTIONS = {"sampling", "study", "prompt", "timeout", "max_attempts", "max_concurrency", "thinking",
                     *_SAMPLING_CASTS}
LLM_OPTIONS = frozenset({*_SETTINGS_OPTIONS, "transport", "api_base", "api_key_env", "usd_per_mtok_in",
                         "usd_per_mtok_out", "seed"})
"""Options a ``litellm:`` spec reads (any other is refused, naming these)."""
VLLM_OPTIONS = LLM_OPTIONS | {"executable", "python", "size", "tp", "max_model_len", "gpu_memory_utilization",
                              "served_model_name", "host", "port", "startup_timeout", "chunked_prefill",
                              "kv_cache_memory_bytes"}
"""Options a ``vllm:`` spec reads."""
HF_OPTIONS = frozenset({*_SETTINGS_OPTIONS, "device", "dtype", "max_batch", "batch_wait_ms"})
"""Options an ``hf:`` spec reads."""


class LLMSettings(BaseModel):
    """What a prompted agent takes from the protocol and the harness."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Settings format version."""
    sampling: Sampling
    """The protocol's decoding settings for this agent's sampling role."""
    sampling_role: SamplingRole
    """Which protocol setting ``sampling`` is."""
    converge_from_turn: int = Field(gt=0)
    """Turn from which prompts say to converge (protocol ``environment``)."""
    prompt: PromptVariant = "evaluation"
    """Prompt template variant."""
    retry: RetryPolicy = RetryPolicy()
    """Retry policy for transient failures."""
    max_concurrency: int = Field(default=64, gt=0)
    """Concurrent requests per endpoint."""


def default_sampling_role(kind: str, role: Role) -> SamplingRole:
    """Buyers use ``buyer``; self-served sellers (vllm, hf) ``self_served_seller``; others ``reference_seller``."""
    if role == "buyer":
        return "buyer"
    return "self_served_seller" if kind in ("vllm", "hf", "policy") else "reference_seller"


def settings_from_protocol(protocol: Any, sampling_role: SamplingRole, **overrides: Any) -> LLMSettings:
    """Settings from a loaded ``negotiation.protocol.Protocol``."""
    sequences = protocol.training.sequences
    max_tokens = sequences.new_tokens_per_turn if sampling_role == "self_served_seller" and sequences else None
    sampling = Sampling.from_protocol(getattr(protocol.sampling, sampling_role), max_tokens)
    return LLMSettings(sampling=sampling, sampling_role=sampling_role,
                       converge_from_turn=protocol.environment.converge_from_turn, **overrides)


def settings_from_study(study: str, sampling_role: SamplingRole) -> LLMSettings:
    from negotiation.study import load_study

    return settings_from_protocol(load_study(study).protocol, sampling_role)


def turn_seed(sample_seed: int, turn: int, role: Role) -> int:
    """A per-request seed (31 bits) from the episode's sample seed, the turn and the role.

    A hash rather than ``SeedSequence``: this runs on every request and must stay cheap.
    """
    text = f"{int(sample_seed)}:{int(turn)}:{role}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") & 0x7FFFFFFF


class LLMAgent:
    """A chat model behind a transport; one instance serves every episode of a cell."""

    blocking = False

    def __init__(self, spec: str, role: Role, transport: Any, settings: LLMSettings, *, sending: Sampling,
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
        self.record = SamplingRecord(agent=spec, role=role, sampling_role=settings.sampling_role, provider=provider,
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

        async def call() -> Any:
            params = dict(self.params)
            if self.send_seed and "seed" not in self.record.rejected:
                params["seed"] = seed
            if limiter is None:
                return await self.transport.complete(messages, params, self.extra)
            estimate = estimate_tokens(messages, params.get("max_tokens"))
            await limiter.acquire(estimate)  # every attempt is a request to the provider
            completion = await self.transport.complete(messages, params, self.extra)
            limiter.settle(estimate, completion.tokens_in + completion.tokens_out)
            return completion

        jitter = (int(view.sample_seed), int(view.turn), 0 if view.role == "seller" else 1)
        semaphore = endpoint_semaphore(self.endpoint, self.settings.max_concurrency)
        start = time.perf_counter()
        try:
            completion, retries = await call_with_retries(call, self.settings.retry, jitter, semaphore=semaphore,
                                                          on_failure=self._drop_refused)
        except CallFailure as failure:
            raise AgentCallError(failure, retries=getattr(failure, "retries", 0), spec=self.spec,
                                 role=self.role) from failure
        self.calls_ok += 1
        cost = self.price.cost(completion.tokens_in, completion.tokens_out) if self.price else None
        return Reply(completion.text, completion.tokens_in, completion.tokens_out, cost,
                     time.perf_counter() - start, retries)

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


def spec_sampling_overrides(spec: AgentSpec) -> dict[str, Any]:
    """Sampling values a spec sets explicitly (validated by ``Sampling``)."""
    found = {k: spec.option(k, None, cast) for k, cast in _SAMPLING_CASTS.items() if k in spec.options}
    if "thinking" in spec.options:
        value = spec.options["thinking"].lower()
        if value not in ("true", "false"):
            raise ConfigError(f"agent spec {spec.text!r}:thinking: expected true or false, got {value!r}")
        found["thinking"] = value == "true"
    return found


def resolve_settings(spec: AgentSpec, role: Role, settings: LLMSettings | None) -> LLMSettings:
    """The caller's settings, or the spec's study protocol's, with the spec's prompt/retry options."""
    if settings is None:
        sampling_role = spec.option("sampling", default_sampling_role(spec.kind, role))
        if sampling_role not in ("self_served_seller", "reference_seller", "buyer"):
            raise ConfigError(f"agent spec {spec.text!r}:sampling: unknown setting {sampling_role!r}")
        settings = settings_from_study(spec.option("study", "paper"), sampling_role)
    updates: dict[str, Any] = {}
    if "prompt" in spec.options:
        if spec.options["prompt"] not in PROMPT_TEMPLATES:
            raise ConfigError(f"agent spec {spec.text!r}:prompt: unknown variant {spec.options['prompt']!r}; "
                              f"known: {sorted(PROMPT_TEMPLATES)}")
        updates["prompt"] = spec.options["prompt"]
    retry = {}
    if "timeout" in spec.options:
        retry["timeout_s"] = spec.option("timeout", None, float, lo=0, hi=86_400, lo_open=True)
    if "max_attempts" in spec.options:
        retry["max_attempts"] = spec.option("max_attempts", None, int, lo=1, hi=100)
    if retry:  # validated again by the model (model_copy would skip its constraints)
        updates["retry"] = type(settings.retry).model_validate({**settings.retry.model_dump(), **retry})
    if "max_concurrency" in spec.options:
        updates["max_concurrency"] = spec.option("max_concurrency", 64, int, lo=1, hi=4096)
    return settings.model_copy(update=updates) if updates else settings


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
                                       timeout_s=settings.retry.timeout_s, max_connections=settings.max_concurrency)
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


def make_vllm_agent(spec: AgentSpec, role: Role, settings: LLMSettings | None = None,
                    serve: Any = None) -> LLMAgent:
    """Factory for ``vllm:<checkpoint>``: starts ``vllm serve`` (see ``_llm_vllm``) or uses ``api_base``."""
    from negotiation.agents._llm_vllm import attach_vllm_server

    spec.check_known(VLLM_OPTIONS)
    return attach_vllm_server(spec, role, resolve_settings(spec, role, settings), serve)


def make_hf_agent(spec: AgentSpec, role: Role, settings: LLMSettings | None = None) -> Any:
    """Factory for ``hf:<model dir>``: a local transformers model (imported on first use)."""
    from negotiation.agents._llm_hf import HfAgent

    spec.check_known(HF_OPTIONS)
    return HfAgent(spec, role, resolve_settings(spec, role, settings))
