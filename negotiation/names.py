"""Names that become paths: domain, study, arm and buyer names are checked before use.

A name is 1-64 characters of letters, digits, ``_``, ``-`` and ``.``, starting with a letter or
digit (so never ``.``, ``..``, a hidden file or a path with ``/``). ``--arm ..`` once wrote
shards where the store never looked and ``nego scenario ../../tmp/x 1`` loaded ``/tmp/x.yaml``.
"""

from __future__ import annotations

import re
from pathlib import Path

from negotiation.errors import ConfigError

__all__ = ["SAFE_NAME", "check_name", "inside"]

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a name that becomes a file or folder name must match (whole)."""


def check_name(kind: str, name: object) -> str:
    """``name`` if it is safe as a file or folder name, else ``ConfigError`` naming ``kind``."""
    if isinstance(name, str) and SAFE_NAME.fullmatch(name) and ".." not in name:
        return name
    shown = repr(name) if len(repr(name)) <= 70 else repr(name)[:67] + "..."
    raise ConfigError(f"{kind}:name: {shown} is not a safe name; use 1-64 letters, digits, '_', '-' or '.', "
                      "starting with a letter or digit")


def inside(folder: Path, path: Path) -> bool:
    """Whether ``path``, symlinks resolved, lies inside ``folder`` (resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True
