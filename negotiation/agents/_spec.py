"""Agent spec strings: ``kind:target?key=value&...`` names every seller and buyer.

Kinds resolve lazily through a registry of import paths, so choosing ``scripted:boulware``
never imports torch or litellm. Secrets never appear in specs: they come from the environment.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qsl

from negotiation.env import Role
from negotiation.errors import ConfigError

# kind -> "module:factory"; a factory takes (AgentSpec, role) and returns an Agent.
_FACTORIES: dict[str, str] = {
    "scripted": "negotiation.agents._scripted:make_scripted",
    "policy": "negotiation.agents._policy:make_policy_agent",
    "litellm": "negotiation.agents._llm:make_litellm_agent",
    "vllm": "negotiation.agents._llm:make_vllm_agent",
    "hf": "negotiation.agents._llm:make_hf_agent",
}


@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec string."""

    kind: str
    target: str
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def option(self, key: str, default: Any, cast: Callable[[str], Any] = str) -> Any:
        """Typed option value, with an error naming the spec, key and value."""
        if key not in self.options:
            return default
        try:
            return cast(self.options[key])
        except ValueError as exc:
            raise ConfigError(f"agent spec {self.text!r}:{key}: cannot read {self.options[key]!r} ({exc})") from exc


def parse_spec(text: str) -> AgentSpec:
    """Parse ``kind:target?k=v&...``; raise ``ConfigError`` naming the bad part."""
    if not isinstance(text, str) or ":" not in text:
        raise ConfigError(f"agent spec {text!r}: expected 'kind:target', e.g. 'scripted:boulware'")
    kind, rest = text.split(":", 1)
    if kind not in _FACTORIES:
        raise ConfigError(f"agent spec {text!r}:kind: unknown kind {kind!r}; known: {', '.join(sorted(_FACTORIES))}")
    target, _, query = rest.partition("?")
    if not target:
        raise ConfigError(f"agent spec {text!r}:target: empty")
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False)) if query else {}
    return AgentSpec(kind, target, options, text)


def register_kind(kind: str, factory_path: str) -> None:
    """Register a new agent kind by ``module:function`` path (plugins, tests)."""
    _FACTORIES[kind] = factory_path


def make_agent(spec: str | AgentSpec, role: Role) -> Any:
    """Build the agent a spec names, for ``role``."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    module_name, func_name = _FACTORIES[parsed.kind].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"agent spec {parsed.text!r}: kind {parsed.kind!r} needs a package that is missing ({exc.name}); "
            "install the matching extra, e.g. `pip install -e .[llm]`"
        ) from exc
    return getattr(module, func_name)(parsed, role)
