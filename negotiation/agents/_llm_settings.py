"""What every prompted agent (``litellm:``, ``vllm:``, ``hf:``) reads before it is built.

The settings record (sampling from the protocol, prompt variant, retry policy, concurrency),
the spec options each kind accepts, the spec's own sampling overrides and the per-turn seed.
The kinds' factories (``_llm``, ``_llm_vllm``, ``_llm_hf``) import from here, never from each
other's settings, so the modules form a tree: this one below, each agent kind above it.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents._kinds import agent_kind
from negotiation.agents._llm_retry import RetryPolicy
from negotiation.agents._llm_sampling import Decoding, SamplingRole
from negotiation.agents._spec import AgentSpec
from negotiation.env import PROMPT_TEMPLATES, PromptVariant, Role
from negotiation.errors import ConfigError

__all__ = ["HF_OPTIONS", "LLM_OPTIONS", "LLMSettings", "VLLM_OPTIONS", "default_sampling_role", "resolve_settings",
           "llm_settings", "settings_from_study", "spec_sampling_overrides", "turn_seed"]

_SAMPLING_CASTS = {"temperature": float, "top_p": float, "top_k": int, "max_tokens": int}
_SETTINGS_OPTIONS = {"sampling", "study", "prompt", "timeout", "max_attempts", "max_reply_bytes", "max_concurrency",
                     "thinking", *_SAMPLING_CASTS}
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
    sampling: Decoding
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
    """Buyers use ``buyer``; a seller its kind's ``AgentKind.seller_sampling`` (``kind``: a kind
    name or a spec; an unknown kind is an error naming it, never the reference seller's setting)."""
    seller_sampling = agent_kind(kind).seller_sampling
    return "buyer" if role == "buyer" else seller_sampling


def llm_settings(protocol: Any, sampling_role: SamplingRole, **overrides: Any) -> LLMSettings:
    """Settings from a loaded ``negotiation.protocol.Protocol``."""
    sequences = protocol.training.sequences
    max_tokens = sequences.new_tokens_per_turn if sampling_role == "self_served_seller" and sequences else None
    sampling = Decoding.from_protocol(getattr(protocol.sampling, sampling_role), max_tokens)
    return LLMSettings(sampling=sampling, sampling_role=sampling_role,
                       converge_from_turn=protocol.environment.converge_from_turn, **overrides)


def settings_from_study(study: str, sampling_role: SamplingRole) -> LLMSettings:
    from negotiation.study import load_study  # lazy: agents must not need the study package

    return llm_settings(load_study(study).protocol, sampling_role)


def turn_seed(sample_seed: int, turn: int, role: Role) -> int:
    """A per-request seed (31 bits) from the episode's sample seed, the turn and the role.

    A hash rather than ``SeedSequence``: this runs on every request and must stay cheap.
    """
    text = f"{int(sample_seed)}:{int(turn)}:{role}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") & 0x7FFFFFFF


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
    if "max_reply_bytes" in spec.options:
        retry["max_reply_bytes"] = spec.option("max_reply_bytes", None, int, lo=1, hi=2**31)
    if retry:  # validated again by the model (model_copy would skip its constraints)
        updates["retry"] = type(settings.retry).model_validate({**settings.retry.model_dump(), **retry})
    if "max_concurrency" in spec.options:
        updates["max_concurrency"] = spec.option("max_concurrency", 64, int, lo=1, hi=4096)
    return settings.model_copy(update=updates) if updates else settings
