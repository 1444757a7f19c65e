"""Shared options and output helpers of the ``nego`` commands."""

from __future__ import annotations

import json
import math
import os
import sys
import unicodedata
from typing import TYPE_CHECKING, Any, Sequence

import typer

from negotiation.errors import ConfigError

if TYPE_CHECKING:  # rich and the scenario code (numpy) load when a command prints or draws one
    from rich.console import Console

    from negotiation.env import Scenario

__all__ = ["JSON_OPTION", "STUDY_OPTION", "console", "jsonable", "print_json", "print_table", "read_json_arg",
           "scenario_for"]

JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of rich text.")
PROFILE_OPTION = typer.Option(None, "--profile", help="Hardware profile whose evaluation design the results follow "
                              "(cpu or gpu; default: gpu for a GPU profile's results folder, a kept copy of one, "
                              "or a table of its arms).")
STUDY_OPTION = typer.Option(
    "demo", "--study", help="Study whose protocol/<study>/protocol.yaml supplies the environment constants."
)


def console() -> Console:
    """A console on stdout; plain text when stdout is not a terminal (pipes, tests).

    Off a terminal rich falls back to 80 columns, which folds the scenario table; transcripts
    piped to a file read better at 120 unless ``COLUMNS`` says otherwise.
    """
    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    return Console(highlight=False, width=width)


def _width(text: str) -> int:
    """Terminal columns of ``text``: wide (East Asian) characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> None:
    """``rows`` under ``header`` as plain columns two spaces apart, a rule under the header.

    Plain text, not a rich table: cells come from data (domain files, parsed messages) and are
    printed as they are, never read as markup; and the look-up commands need no console.
    """
    widths = [max(map(_width, column)) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)).rstrip()

    lines = [title] if title else []
    lines += [line(header), line(["-" * w for w in widths]), *map(line, rows)]
    sys.stdout.write("\n".join(lines) + "\n")


def jsonable(value: Any) -> Any:
    """``value`` with NaN/inf as null and tuples as lists, so the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return jsonable(value.item())
    return value


def print_json(payload: Any) -> None:
    text = json.dumps(jsonable(payload), ensure_ascii=False, allow_nan=False, indent=2)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):  # a lone surrogate from argv, or a narrow terminal encoding
        text = json.dumps(jsonable(payload), allow_nan=False, indent=2)
    sys.stdout.write(text + "\n")


def read_json_arg(option: str, text: str) -> Any:
    """Decode a JSON command-line value; a bad one names the option, the position and the text."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{option}: invalid JSON at column {exc.colno}: {exc.msg} (got {shown!r})") from None
    except RecursionError:
        raise ConfigError(f"{option}: JSON nested too deeply (got {shown!r})") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise ConfigError(f"{option}: unusable JSON value: {exc} (got {shown!r})") from None


def scenario_for(domain_name: str, seed: int, alpha: float) -> Scenario:
    """The scenario of ``(domain, seed)``; an unknown domain raises ``ConfigError`` naming the known ones."""
    from negotiation.env import load_domain, make_scenario

    return make_scenario(load_domain(domain_name), seed, alpha)
