# Kept: `nego parse`, `play --help` take 2.4x less start-up CPU (benchmarks/cli_start.py --against).
"""Option values converted without pydantic where the conversion is plain; typer's own otherwise.

typer (0.2x) converts every value that is not already a flag's bool through a pydantic
``TypeAdapter`` built on first use; importing pydantic's adapter machinery and building the
adapters costs about 0.15 s, more than the rest of ``nego parse``'s start-up together. Most of
``nego``'s values are a ``str``, a ``bool``, an ``int`` or ``float`` in a range, a ``Path``, a
``Literal`` choice or a list of ``str``, whose conversion is exact without pydantic.
``install_plain_params`` gives each such parameter a converter that returns a value only when
it is sure to be the one typer's adapter returns (a plain digit string for an ``int``, a value
inside the range); anything else (a bad value, a plus sign, an underscore, a type not listed) goes
to typer's own adapter, so every error message and every unusual value reads as before.
``tests/cli/test_cli_coerce.py`` checks both agree over every parameter of every command.

This reaches into typer's private coercion layer (``typer._coercion``): on a typer without it
(older releases, on click's types) ``install_plain_params`` does nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["install_plain_params"]

try:
    from typer._click.exceptions import BadParameter
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path, lenient_issubclass
    from typer._typing import get_args, get_origin, is_literal_type, literal_values
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - a typer converting on click's types: nothing to replace
    RuntimeParam = None

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_UNSURE = (ValueError, TypeError, OSError) + ((BadParameter,) if RuntimeParam is not None else ())
"""What a plain converter may raise on a value it cannot vouch for: typer's adapter decides it."""


class _Unsure(Exception):
    """A value the plain converter leaves to typer's adapter."""


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _PlainParam(RuntimeParam):
        """``convert`` where it is sure of the value, typer's adapter where it is not."""

        descriptor: TypeDescriptor
        convert: Callable[[Any, Any, Any], Any]

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return self.convert(value, param, ctx)
            except (_Unsure, *_UNSURE):
                return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)


def _in_range(value: float, info: Any) -> Any:
    if (info.min is not None and not value >= info.min) or (info.max is not None and not value <= info.max):
        raise _Unsure  # out of range: typer's message names the range
    return value


def _number(kind: type, pattern: re.Pattern, info: Any) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is kind and (kind is int or math.isfinite(value)):
            return _in_range(value, info)  # a default, or a count
        if isinstance(value, str) and pattern.fullmatch(value):
            return _in_range(kind(value), info)
        raise _Unsure

    return convert


def _exactly(kind: type) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is kind:  # a str from the command line, a flag's bool: returned as they are
            return value
        raise _Unsure

    return convert


def _path(info: Any, annotation: type) -> Callable[[Any, Any, Any], Any]:
    path_type = info.path_type or annotation

    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is not str:
            raise _Unsure
        # pydantic's Path(str) is Path(value); the checks (exists, file_okay, ...) are typer's own
        return coerce_cli_path(path_type(value), info, path_type=path_type, param=param, ctx=ctx)

    return convert


def _choice(choices: tuple, info: Any) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        return coerce_cli_choice(value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx)

    return convert


def _text_list(value: Any, param: Any, ctx: Any) -> Any:
    if isinstance(value, (list, tuple)) and all(type(v) is str for v in value):
        return list(value)
    raise _Unsure


def _converter(descriptor: TypeDescriptor) -> Optional[Callable[[Any, Any, Any], Any]]:
    """The plain converter of a parameter, or ``None`` for one only typer's adapter converts."""
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if info.parser is not None or info.clamp or descriptor.file_annotation is not None:
        return None
    if annotation in (str, bool):
        return _exactly(annotation)
    if annotation in (int, float):
        return _number(annotation, _INT if annotation is int else _FLOAT, info)
    if lenient_issubclass(annotation, Path) and not info.allow_dash:
        return _path(info, annotation)
    if is_literal_type(annotation) and all(isinstance(v, str) for v in literal_values(annotation)):
        return _choice(literal_values(annotation), info)
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return _text_list
    return None


def _get_runtime_param(self: Any) -> Any:
    """typer's ``_TyperParameter.get_runtime_param``, a plain converter first where there is one."""
    if self._runtime_param is None:
        d = self.type_descriptor
        convert = _converter(d)
        self._runtime_param = (build_runtime_param(d) if convert is None else
                               _PlainParam(d.parameter_info, d.annotation, descriptor=d, convert=convert))
    return self._runtime_param


def install_plain_params() -> None:
    """Make typer try the plain converters before its adapters, in this process.

    On the class, not per command: typer builds the ``--help`` option of each command while it
    parses (``get_params``), after any hook of ``nego``'s could reach it, and converts it too.
    Every typer app in the process is affected alike, which is safe because the plain converters
    answer only where they are exact; ``nego`` is the only typer app the package runs.
    """
    if RuntimeParam is not None:
        _TyperParameter.get_runtime_param = _get_runtime_param
