"""Strict YAML/JSON reading shared by the protocol and the registry.

Every problem becomes a ``ConfigError`` whose message reads ``file:key: reason``, so the CLI can
print it as one line instead of a traceback. YAML mappings with a repeated key are rejected:
PyYAML would silently keep the last value, which is how a frozen number changes unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from negotiation.errors import ConfigError, format_validation_error

__all__ = ["StrictModel", "display_path", "load_json_model", "load_yaml", "load_yaml_model", "parse_yaml"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every protocol and registry record: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


# libyaml's parser when PyYAML was built with it: the pure-Python one is ~20x slower.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """Safe loader that refuses a mapping with the same key twice."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen[key] = True
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def display_path(path: Path, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies under it (messages stay short and stable)."""
    if root is not None:
        try:
            return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return str(path)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"line {mark.line + 1} column {mark.column + 1}: invalid YAML: {problem}"


def parse_yaml(text: str | bytes) -> Any:
    """Parse YAML text with the safe, duplicate-refusing loader (raises ``yaml.YAMLError``)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a safe loader subclass


def load_yaml(path: Path, *, root: Path | None = None) -> dict[str, Any]:
    """Read a YAML file whose top level is a mapping; raise ``ConfigError`` otherwise."""
    shown = display_path(path, root)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{shown}:<file>: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}:<file>: cannot read ({exc})") from exc
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{shown}:{_yaml_reason(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{shown}:<root>: top level must be a mapping, got {type(data).__name__}")
    return data


def _validate(model: type[ModelT], data: Any, shown: str) -> ModelT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(shown, exc)) from exc


def load_yaml_model(model: type[ModelT], path: Path, *, root: Path | None = None) -> ModelT:
    """Read and validate one YAML file against ``model``."""
    return _validate(model, load_yaml(path, root=root), display_path(path, root))


def load_json_model(model: type[ModelT], path: Path, *, root: Path | None = None) -> ModelT:
    """Read and validate one JSON file against ``model``."""
    shown = display_path(path, root)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{shown}:<file>: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}:<file>: cannot read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{shown}:line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from exc
    return _validate(model, data, shown)
