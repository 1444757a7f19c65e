"""The protocol an arm actually ran under: the frozen one with its deviations' ``values`` applied.

The frozen protocol holds what was frozen before any arm ran (the paper: 31B served on two
accelerators). A departure that changes a number is a deviation with ``values`` (entry 17: the
31B arms on four); the pipeline serves and evaluates each arm under ``effective_protocol``, and
the report reads the same function, so the departed value lives in the registry alone.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from negotiation.errors import ConfigError
from negotiation.protocol import Protocol
from negotiation.study._registry import Registry

__all__ = ["effective_protocol", "value_problems"]


def _get(obj: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, BaseModel) and part in type(obj).model_fields:
            obj = getattr(obj, part)
        else:
            raise KeyError(part)
    return obj


def _set(obj: Any, parts: list[str], value: Any) -> Any:
    """A copy of ``obj`` with the value at ``parts`` replaced (models and dicts alike)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(obj, dict):
        return {**obj, head: _set(obj[head], rest, value)}
    return obj.model_copy(update={head: _set(getattr(obj, head), rest, value)})


def value_problems(protocol: Protocol, registry: Registry) -> list[str]:
    """``file:values.<key>: reason`` for deviation values naming no frozen protocol key."""
    problems = []
    for entry_id, entry in sorted(registry.deviations.entries.items()):
        for key in entry.values:
            try:
                _get(protocol, key.split("."))
            except KeyError as exc:
                problems.append(f"{registry.show(registry.deviations.paths[entry_id])}:values.{key}: no protocol "
                                f"key {exc.args[0]!r} there")
    return problems


def effective_protocol(protocol: Protocol, registry: Registry, arm: str) -> Protocol:
    """``protocol`` with the ``values`` of every active deviation covering ``arm`` applied, by id."""
    for entry in registry.deviations.active():
        if not (entry.values and entry.covers(arm)):
            continue
        shown = registry.show(registry.deviations.paths[entry.id])
        for key, value in entry.values.items():
            try:
                _get(protocol, key.split("."))
                protocol = _set(protocol, key.split("."), value)
            except KeyError as exc:
                raise ConfigError(f"{shown}:values.{key}: no protocol key {exc.args[0]!r} there") from exc
        try:
            protocol = Protocol.model_validate(protocol.model_dump())
        except ValidationError as exc:
            raise ConfigError(f"{shown}:values: the protocol with these values is invalid: "
                              f"{exc.errors()[0]['msg']}") from exc
    return protocol
