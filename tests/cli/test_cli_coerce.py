"""The plain converters (``negotiation.cli._coerce``) agree with typer's pydantic adapters.

Over every parameter of every ``nego`` command, for values from the command line (strings
typer's adapters accept and refuse alike) and from defaults and counts: the same value of the
same type, or the same error. A converter may only ever decline a value, never decide it
differently.
"""

from __future__ import annotations

import math

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click import Context
from typer._coercion import build_runtime_param
from typer.core import _TyperParameter

from negotiation.cli import app
from negotiation.cli._app import _LAZY, _load
from negotiation.cli._coerce import _PlainParam


def _parameters() -> dict[str, tuple]:
    """``{command path + name: (command, parameter)}`` for every converted parameter of ``nego``."""
    group = typer.main.get_command(app)
    found: dict[str, tuple] = {}

    def walk(path: str, command) -> None:
        params = [*command.params, command.get_help_option(Context(command))]
        for param in params:
            if isinstance(param, _TyperParameter):
                found[f"{path} {param.name}"] = (command, param)
        for name, sub in getattr(command, "commands", {}).items():
            walk(f"{path} {name}", sub)

    walk("nego", group)
    for name in _LAZY:
        walk(f"nego {name}", _load(name))
    return found


PARAMETERS = _parameters()
STRINGS = ["", "0", "1", "-1", "007", "-0", "+5", "1_000", " 5", "5 ", "5.0", "1.5", "-0.5", ".5", "5.", "1e3",
           "nan", "inf", "-inf", "0.001", "0.0009", "4096", "4097", "65535", "65536", "100", "101", "x", "True",
           "evaluation", "training", "EVALUATION", "demo", "\udc80x", "é", ".", "-", "/nonexistent/x", "a\x00b",
           "9" * 5000]
TYPED = [0, 1, 5, 16, -1, 0.0, 1.0, 120.0, -0.5, math.inf, math.nan, True, False, (), ("a", "b"), ["a"], ("a", 1)]


def _outcome(runtime, value, command, param):
    """``("value", type, value)`` or ``("error", type, message)`` of one conversion."""
    try:
        result = runtime._coerce_value(value, param=param, ctx=Context(command))
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return "error", type(exc), str(exc)
    if isinstance(result, float) and math.isnan(result):
        return "value", float, "nan"
    return "value", type(result), result


def _agree(key: str, value) -> None:
    command, param = PARAMETERS[key]
    param._runtime_param = None
    plain = param.get_runtime_param()
    if not isinstance(plain, _PlainParam):
        return  # a type only typer's adapter converts
    assert _outcome(plain, value, command, param) == _outcome(build_runtime_param(param.type_descriptor), value,
                                                              command, param), (key, value)


def test_the_common_parameters_get_a_plain_converter():
    kinds = {key: isinstance(param.get_runtime_param(), _PlainParam) for key, (_, param) in PARAMETERS.items()}
    assert all(kinds[k] for k in ("nego root", "nego verbose", "nego scenario seed", "nego scenario study",
                                  "nego play phase", "nego evaluate timeout", "nego evaluate buyer"))


@pytest.mark.parametrize("key", sorted(PARAMETERS))
def test_plain_converters_agree_with_typers_adapters(key, tmp_path):
    (tmp_path / "file").write_text("x")
    for value in [*STRINGS, *TYPED, str(tmp_path), str(tmp_path / "file"), str(tmp_path / "new")]:
        _agree(key, value)


NUMERIC_KEYS = sorted(k for k, (_, p) in PARAMETERS.items() if p.type_descriptor.annotation in (int, float))


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(NUMERIC_KEYS), text=st.from_regex(r"[-+ ._0-9e]{0,8}", fullmatch=True))
def test_numbers_from_any_short_text_agree(key, text):
    _agree(key, text)
