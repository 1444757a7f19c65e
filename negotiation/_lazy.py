"""Lazy package exports: a package's public names, imported from their submodule on first use.

A package lists ``{submodule: (names, ...)}`` and keeps a two-line ``__getattr__`` that calls
``lazy_attribute`` (the ``def __getattr__`` is what ``negotiation.pipeline._deps`` follows to the
submodule defining a name, so each package keeps its own).
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

__all__ = ["homes", "lazy_attribute"]


def homes(exports: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """``{name: submodule}`` of an ``{submodule: names}`` export table."""
    return {name: module for module, names in exports.items() for name in names}


def lazy_attribute(package: str, home: Mapping[str, str], name: str) -> Any:
    """``name`` of ``package``, imported from its submodule ``home[name]``; ``AttributeError`` for
    a name the package does not export (so ``hasattr`` and ``getattr(..., default)`` work)."""
    module = home.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{module}"), name)
