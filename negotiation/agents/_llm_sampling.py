"""Sampling settings: what the protocol asks for, what is sent, what the provider accepted.

The protocol fixes decoding per role (Appendix A: self-served sellers at temperature 1.0,
top-p 0.95, top-k 64, thinking off; reference sellers at 0.7; buyers at 1.0). Not every
provider takes every parameter: an OpenAI-compatible endpoint (vLLM, the stand-in) takes
``top_k`` and ``chat_template_kwargs`` in the body; litellm passes ``top_k`` natively only to
providers that have one; some models refuse a temperature outright. ``plan_sampling`` decides
before the first call what will be sent and says why anything differs (the harness warns at
start); ``SamplingLog.reject`` records the fallback when a provider refuses a parameter at
run time, so the results state the decoding each cell really ran with.

Names: ``Decoding`` is what one agent sends (the protocol's per-role values are
``negotiation.protocol.SamplingSettings``, its whole section ``negotiation.protocol.Sampling``);
``SamplingLog`` is one agent's live log, from which the harness writes the file the audit reads,
``negotiation.study.SamplingRecord``.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SamplingRole = Literal["self_served_seller", "reference_seller", "buyer"]
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "thinking", "max_tokens")
# litellm providers that accept ``top_k`` as a native argument (others would reject or ignore it).
TOP_K_PROVIDERS = frozenset({"anthropic", "vertex_ai", "vertex_ai_beta", "gemini", "bedrock", "hosted_vllm",
                             "ollama", "ollama_chat", "together_ai", "fireworks_ai", "huggingface"})


class SamplingDriftWarning(UserWarning):
    """What will be sent differs from the protocol's sampling settings."""


class Decoding(BaseModel):
    """Decoding parameters for one agent; ``None`` means not sent (the provider's default)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus truncation."""
    top_k: int | None = Field(default=None, gt=0)
    """Top-k truncation."""
    thinking: bool | None = None
    """Whether the model's thinking mode is enabled (chat-template switch)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Generation cap per turn."""

    @classmethod
    def from_protocol(cls, settings: Any, max_tokens: int | None = None) -> Decoding:
        """From a protocol ``SamplingSettings`` (any object with the same attributes)."""
        values = {k: getattr(settings, k, None) for k in ("temperature", "top_p", "top_k", "thinking")}
        return cls(**values, max_tokens=max_tokens)

    def with_overrides(self, overrides: dict[str, Any]) -> Decoding:
        """A copy with spec-string overrides applied (validated)."""
        return Decoding.model_validate({**self.model_dump(), **overrides})

    def sent_values(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class SamplingLog(BaseModel):
    """Per agent: requested by the protocol, sent, not sent (and why), refused by the provider."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Record format version."""
    agent: str
    """Agent spec (secrets never appear in specs)."""
    role: str
    """``seller`` or ``buyer``."""
    sampling_role: SamplingRole
    """Which protocol setting applies."""
    provider: str
    """Provider as litellm names it (``openai``, ``anthropic``, ...)."""
    transport: str
    """``http`` (direct OpenAI-compatible) or ``litellm``."""
    requested: dict[str, Any]
    """The protocol's values."""
    sent: dict[str, Any]
    """Values put in every request (``seed`` is per turn and listed as ``"per-turn"``)."""
    not_sent: dict[str, str] = {}
    """Requested but not sent, with the reason (decided before the first call)."""
    rejected: dict[str, str] = {}
    """Refused by the provider at run time (then dropped: the fallback), with its message."""

    @property
    def accepted(self) -> dict[str, Any]:
        """What the provider ran with, as far as requests can tell."""
        return {k: v for k, v in self.sent.items() if k not in self.rejected}

    def drift(self) -> list[str]:
        """Human lines for every difference between requested and sent."""
        lines = [f"{k}: requested {v!r}, not sent ({self.not_sent[k]})" for k, v in self.requested.items()
                 if k in self.not_sent]
        lines += [f"{k}: requested {self.requested.get(k)!r}, sending {v!r}" for k, v in self.sent.items()
                  if k in SAMPLING_KEYS and k not in self.not_sent and self.requested.get(k) != v]
        lines += [f"{k}: rejected by the provider, dropped ({msg})" for k, msg in self.rejected.items()]
        return lines

    def reject(self, key: str, message: str) -> None:
        """Record that the provider refused ``key``; later requests omit it."""
        self.rejected[key] = message[:300]


def plan_sampling(requested: Decoding, sending: Decoding, *, provider: str, openai_compatible: bool,
                  supported: frozenset[str] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """``(params, extra_body, not_sent)`` for a provider.

    Args:
        requested: the protocol's values (only used for messages).
        sending: what the agent wants to send (protocol plus spec overrides).
        provider: litellm provider name.
        openai_compatible: whether the endpoint takes vLLM's extra body fields.
        supported: OpenAI parameters the provider takes (``None``: all of them).
    """
    del requested  # the caller compares; kept in the signature so call sites read as intended
    params: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    not_sent: dict[str, str] = {}
    for key in ("temperature", "top_p", "max_tokens"):
        value = getattr(sending, key)
        if value is None:
            continue
        if supported is not None and key not in supported:
            not_sent[key] = f"{provider} does not take {key}"
        else:
            params[key] = value
    if sending.top_k is not None:
        if openai_compatible:
            extra["top_k"] = sending.top_k
        elif provider in TOP_K_PROVIDERS:
            params["top_k"] = sending.top_k
        else:
            not_sent["top_k"] = f"{provider} has no top_k parameter"
    if sending.thinking is not None:
        if openai_compatible:
            extra["chat_template_kwargs"] = {"enable_thinking": sending.thinking}
        else:
            not_sent["thinking"] = f"{provider}: no chat-template switch; the provider's default applies"
    return params, extra, not_sent


def warn_drift(record: SamplingLog) -> list[str]:
    """Emit one ``SamplingDriftWarning`` per difference; returns the lines."""
    lines = record.drift()
    for line in lines:
        warnings.warn(f"{record.agent} ({record.role}): {line}", SamplingDriftWarning, stacklevel=3)
    return lines
