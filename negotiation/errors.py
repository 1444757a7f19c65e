"""Errors a user can fix, printed by the CLI as ``file:key: reason`` without a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is imported by whoever raises one; `nego parse` never does
    from pydantic import ValidationError

__all__ = ["ConfigError", "NegotiationError", "format_validation_error"]


class NegotiationError(Exception):
    """Base class for errors the CLI reports as one line and a non-zero exit."""


class ConfigError(NegotiationError):
    """A file or argument is malformed; the message names the file, key and value."""


def format_validation_error(path: str | Path, exc: ValidationError, section: str = "") -> str:
    """One ``file:key.path: reason (got value)`` line per pydantic error; ``section`` prefixes
    the key when the model validated one section of the file."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in (section, *err["loc"]) if p != "") or "<root>"
        value = err.get("input")
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        lines.append(f"{path}:{key}: {err['msg']} (got {shown})")
    return "\n".join(lines)
