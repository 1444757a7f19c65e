"""Logging of every entry point: messages on stderr, level from ``-v``/``-q`` or ``$NEGO_LOG_LEVEL``.

Library modules log with ``logging.getLogger(__name__)`` and never configure logging; the ``nego``
command and the DVC stage scripts call ``configure_logging`` once. Progress bars are separate
(rich, on stderr) and shown only when stderr is a terminal or ``$NEGO_PROGRESS=1``.
"""

from __future__ import annotations

import logging
import os

LEVEL_ENV = "NEGO_LOG_LEVEL"
_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)


def level_for(verbosity: int, default: int = logging.WARNING) -> int:
    """``-v`` steps one level down from ``default`` (INFO, then DEBUG), ``-q`` one up (ERROR)."""
    index = _LEVELS.index(default) - verbosity
    return _LEVELS[min(max(index, 0), len(_LEVELS) - 1)]


def configure_logging(verbosity: int = 0, default: int = logging.WARNING) -> int:
    """Send the package's log records to stderr; ``$NEGO_LOG_LEVEL`` (a level name) wins."""
    named = os.environ.get(LEVEL_ENV, "").strip().upper()
    level = logging.getLevelName(named) if named else level_for(verbosity, default)
    if not isinstance(level, int):
        level = level_for(verbosity, default)
    root = logging.getLogger("negotiation")
    root.setLevel(level)
    if not any(getattr(h, "_nego", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._nego = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    return level
