"""The engine's constants from a protocol: the one conversion every entry point uses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from negotiation.errors import ConfigError, format_validation_error
from negotiation.protocol._files import display_path, load_yaml
from negotiation.protocol._schema_env import Environment

if TYPE_CHECKING:  # the engine (asyncio, the parser) loads when a config is built, not to read α
    from negotiation.env import EnvConfig

PHASES = ("evaluation", "training")


def env_config(protocol: Any, phase: str = "evaluation") -> EnvConfig:
    """``EnvConfig`` for ``phase`` from the protocol's ``environment`` section (T, λ, g_fmt,
    g_len, t_soft and the phase's accept-terms flag)."""
    return environment_config(protocol.environment, phase)


def environment_config(e: Environment, phase: str) -> EnvConfig:
    """``EnvConfig`` for ``phase`` from an ``environment`` section alone (what travels to a
    training backend's environment actor)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    from negotiation.env import EnvConfig

    return EnvConfig(max_rounds=e.max_rounds, no_deal_penalty=e.no_deal_penalty, g_fmt=e.g_fmt, g_len=e.g_len,
                     t_soft=e.t_soft, accept_applies_terms=getattr(e.accept_terms_applied, phase), phase=phase)


def load_environment(path: Path, *, root: Path | None = None) -> Environment:
    """Only the ``environment`` section of a ``protocol.yaml``, validated by the protocol's own model.

    For lookups that need a constant or two (``nego scenario``/``score`` read the Dirichlet α):
    validating one section skips building the rest of the schema. ``negotiation.study.load_study``
    is what checks a whole study.
    """
    shown = display_path(path, root)
    section = load_yaml(path, root=root).get("environment")
    try:
        return Environment.model_validate(section)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(shown, exc, "environment")) from None
