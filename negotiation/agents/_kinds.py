"""Agent kinds, each declared once: the record every module reads instead of testing spec prefixes.

A kind is the ``kind`` of a spec string ``kind:target?...``. Its ``AgentKind`` record says how
to build it and what the harness must know of it: which protocol sampling a seller of the kind
plays with, whether its factory takes the protocol's settings, whether it loads weights from
disk, runs torch in the stage process or sits behind a server this harness starts. Factories
are ``module:function`` strings imported on first use, so naming ``scripted:boulware`` imports
neither torch nor litellm (and ``nego pipeline plan`` follows the strings to a stage's files).

A new kind is one module holding its factory and ``register_kind(AgentKind(...))``; a built-in
kind's record is one entry of ``_BUILTIN`` below. An unknown kind is an error naming the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from negotiation.errors import ConfigError

__all__ = ["AgentKind", "agent_kind", "kind_names", "register_kind"]

SellerSampling = Literal["self_served_seller", "reference_seller"]


@dataclass(frozen=True)
class AgentKind:
    """What the harness knows of one agent kind."""

    name: str
    """The spec prefix (``scripted`` in ``scripted:boulware``)."""
    factory: str
    """``module:function`` building the agent: ``(AgentSpec, role)``; with ``reads_sampling`` also
    ``settings=`` (an ``LLMSettings``), with ``served`` also ``serve=`` (a ``ServeSettings``)."""
    seller_sampling: SellerSampling
    """The protocol's sampling setting a seller of this kind plays with when its arm does not say
    (recorded in the store's fingerprint); a buyer always plays with ``buyer``."""
    reads_sampling: bool = False
    """Its factory takes the protocol's decoding settings (prompted language models)."""
    local_weights: bool = False
    """The spec's target is a checkpoint folder: its weights are hashed into the store's
    fingerprint and logged with the seller's model."""
    in_process_torch: bool = False
    """It runs torch inside the stage process (the stage pins torch to one thread)."""
    served: bool = False
    """It sits behind a server the harness starts unless the spec names ``api_base``: the protocol's
    serving settings apply, and on a Ray cluster the seller gets its own actor and GPUs while
    workers talk to its server."""
    checkpoint_of_study: bool = False
    """Its checkpoint may be one a study's pipeline built (a command then defaults to that study)."""


_KINDS: dict[str, AgentKind] = {}

_BUILTIN = (
    AgentKind("scripted", "negotiation.agents._scripted:make_scripted", "reference_seller"),
    AgentKind("policy", "negotiation.agents._policy:make_policy_agent", "self_served_seller",
              local_weights=True, in_process_torch=True),
    AgentKind("litellm", "negotiation.agents._llm:make_litellm_agent", "reference_seller", reads_sampling=True),
    AgentKind("vllm", "negotiation.agents._llm_vllm:make_vllm_agent", "self_served_seller", reads_sampling=True,
              local_weights=True, served=True, checkpoint_of_study=True),
    AgentKind("hf", "negotiation.agents._llm_hf:make_hf_agent", "self_served_seller", reads_sampling=True,
              local_weights=True, in_process_torch=True, checkpoint_of_study=True),
)


def register_kind(kind: AgentKind) -> AgentKind:
    """Add ``kind`` (a plugin's or a test's); replacing a registered kind by another record is an
    error, never a silent override (registering the same record again is harmless)."""
    if not isinstance(kind, AgentKind):
        raise TypeError(f"register_kind takes an AgentKind, got {type(kind).__name__}")
    if ":" not in kind.factory:
        raise ConfigError(f"agent kind {kind.name!r}: factory {kind.factory!r} is not 'module:function'")
    known = _KINDS.get(kind.name)
    if known is not None and known != kind:
        raise ConfigError(f"agent kind {kind.name!r} is already registered as {known}")
    _KINDS[kind.name] = kind
    return kind


def kind_names() -> list[str]:
    """Every registered kind's name, sorted."""
    return sorted(_KINDS)


def agent_kind(spec: str) -> AgentKind:
    """The record of a spec's kind (``spec`` is a spec string, or a bare kind name); an unknown
    kind is a ``ConfigError`` naming the spec and the known kinds."""
    name = spec.split(":", 1)[0] if isinstance(spec, str) else spec
    found = _KINDS.get(name)
    if found is None:
        raise ConfigError(f"agent spec {spec!r}:kind: unknown kind {name!r}; known: {', '.join(kind_names())}")
    return found


for _kind in _BUILTIN:
    register_kind(_kind)
