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

__all__ = ["StrictModel", "StrictYAMLError", "display_path", "yaml_reason", "load_json_model", "load_yaml", "load_yaml_model", "parse_yaml"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every protocol and registry record: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


# libyaml's parser when PyYAML was built with it: the pure-Python one is ~20x slower.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_STR = "tag:yaml.org,2002:str"
_PLAIN_TAGS = {f"tag:yaml.org,2002:{name}" for name in
               ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")}


class StrictYAMLError(yaml.MarkedYAMLError):
    """A YAML document outside the plain subset protocol files use; ``key`` locates it."""

    def __init__(self, key: str, problem: str, mark: Any):
        super().__init__(problem=problem, problem_mark=mark)
        self.key = key or "<root>"


def _check_plain(root: yaml.Node) -> None:
    """Refuse aliases, tags, non-string and repeated keys before anything is constructed.

    Plain data only: an alias (``*name``) would be expanded, so a 1 KB file of nested aliases
    builds gigabytes; a tag is never meant; a repeated key would silently keep the last value
    (how a frozen number changes unnoticed); an int, date or list key breaks every reader.
    Iterative, so the check costs one pass over the nodes whatever their depth.
    """
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, key = stack.pop()
        if id(node) in seen:
            raise StrictYAMLError(key, "an alias (*name) repeats an anchored node; write the value out", node.start_mark)
        seen.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            raise StrictYAMLError(key, f"tag {node.tag!r} is not allowed (plain YAML only)", node.start_mark)
        if isinstance(node, yaml.MappingNode):
            names: set[str] = set()
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR:
                    shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else f"a {key_node.id}"
                    raise StrictYAMLError(key, f"key {str(shown)[:40]!r} is not a string (quote it)", key_node.start_mark)
                if key_node.value in names:
                    raise StrictYAMLError(key, f"duplicate key {key_node.value!r}", key_node.start_mark)
                names.add(key_node.value)
                stack.append((value_node, f"{key}.{key_node.value}" if key else key_node.value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{key}.{i}" if key else str(i)) for i, child in enumerate(node.value))


def display_path(path: Path, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies under it (messages stay short and stable)."""
    if root is not None:
        try:
            return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return str(path)


def yaml_reason(exc: yaml.YAMLError) -> str:
    """``key: line L column C: invalid YAML: problem`` (the key part for a ``StrictYAMLError``)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"{exc.key}: " if isinstance(exc, StrictYAMLError) else ""
    if mark is None:
        return f"{where or '<file>: '}invalid YAML: {problem}"
    return f"{where}line {mark.line + 1} column {mark.column + 1}: invalid YAML: {problem}"


def parse_yaml(text: str | bytes) -> Any:
    """Parse plain YAML with the safe loader (raises ``yaml.YAMLError``, ``StrictYAMLError``).

    Aliases, tags, non-string and duplicate keys are refused (``_check_plain``) before any
    value is built; nesting too deep to build is an error too.
    """
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_plain(node)
        try:
            return loader.construct_document(node)
        except RecursionError:
            raise StrictYAMLError("", "nested too deeply", node.start_mark) from None
    finally:
        loader.dispose()


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
        raise ConfigError(f"{shown}:{yaml_reason(exc)}") from exc
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
