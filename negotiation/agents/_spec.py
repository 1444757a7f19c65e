"""Agent spec strings: ``kind:target?key=value&...`` names every seller and buyer.

Kinds resolve lazily through their ``AgentKind`` records (``_kinds``), so choosing
``scripted:boulware`` never imports torch or litellm. Secrets never appear in specs: they come
from the environment.
"""

from __future__ import annotations

import difflib
import importlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable
from urllib.parse import parse_qsl

from negotiation._install import install_hint
from negotiation.agents._kinds import AgentKind, agent_kind
from negotiation.agents._llm_secrets import forbid_inline_secrets
from negotiation.env import Role
from negotiation.errors import ConfigError

@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec string."""

    kind: str
    target: str
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def option(self, key: str, default: Any, cast: Callable[[str], Any] = str, *,
               lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Any:
        """Typed option value, with an error naming the spec, key, value and what is allowed.

        Numbers must be finite and, when given, within ``[lo, hi]`` (``(lo, hi]`` with
        ``lo_open``): ``timeout=-5``, ``e=nan`` or ``floor=1e309`` are refused here.
        """
        if key not in self.options:
            return default
        raw = self.options[key]
        allowed = _allowed(cast, lo, hi, lo_open)
        try:
            value = cast(raw)
        except (ValueError, OverflowError) as exc:
            raise ConfigError(f"agent spec {self.text!r}:{key}: cannot read {raw!r}; expected {allowed}") from exc
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bad = not math.isfinite(value) or (lo is not None and (value <= lo if lo_open else value < lo)) \
                or (hi is not None and value > hi)
            if bad:
                raise ConfigError(f"agent spec {self.text!r}:{key}: {raw!r} is out of range; expected {allowed}")
        return value

    def check_known(self, known: Iterable[str]) -> None:
        """Refuse an option this kind does not read (a typo such as ``tempreature``)."""
        names = sorted(set(known))
        for key in self.options:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"agent spec {self.text!r}:{key}: unknown option for kind {self.kind!r}{hint}; "
                                  f"known: {', '.join(names) or 'none'}")


def _allowed(cast: Callable[[str], Any], lo: float | None, hi: float | None, lo_open: bool) -> str:
    kind = {int: "an integer", float: "a finite number"}.get(cast, "a value")  # type: ignore[call-overload]
    if lo is None and hi is None:
        return kind
    low = "" if lo is None else f"{'>' if lo_open else '>='} {lo:g}"
    high = "" if hi is None else f"<= {hi:g}"
    return f"{kind} {' and '.join(p for p in (low, high) if p)}"


def parse_spec(text: str) -> AgentSpec:
    """Parse ``kind:target?k=v&...``; raise ``ConfigError`` naming the bad part."""
    if not isinstance(text, str) or ":" not in text:
        raise ConfigError(f"agent spec {text!r}: expected 'kind:target', e.g. 'scripted:boulware'")
    kind, rest = text.split(":", 1)
    agent_kind(text)  # an unknown kind: an error naming the spec and the known kinds
    target, _, query = rest.partition("?")
    if not target:
        raise ConfigError(f"agent spec {text!r}:target: empty")
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False)) if query else {}
    forbid_inline_secrets(text, options)
    return AgentSpec(kind, target, options, text)


def kind_factory(kind: AgentKind, spec_text: str = "") -> Callable[..., Any]:
    """The factory function of ``kind``, imported now (a missing package: an error with the hint)."""
    module_name, func_name = kind.factory.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = install_hint(exc) or "install the package that provides it"
        raise ConfigError(f"agent spec {spec_text or kind.name!r}: kind {kind.name!r} needs a package that is "
                          f"missing ({exc.name}); {hint}") from exc
    return getattr(module, func_name)


def make_agent(spec: str | AgentSpec, role: Role) -> Any:
    """Build the agent a spec names, for ``role`` (language models with their spec's study settings)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    return kind_factory(agent_kind(parsed.text or parsed.kind), parsed.text)(parsed, role)
