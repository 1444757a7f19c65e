"""Where the study's repository root is: the folder holding ``protocol/`` and ``registry/``.

As git and dvc do, the root is found from the working directory, not from where the package is
installed, so ``nego audit paper`` inside another clone audits that clone, and a non-editable
``pip install .`` works against any checkout. In order:

1. ``$NEGO_ROOT`` (``nego --root PATH`` sets it, so stage subprocesses inherit it);
2. the working directory or its nearest parent holding ``protocol/`` and ``registry/``;
3. the checkout this package was loaded from (an editable install run from outside any clone).
"""

from __future__ import annotations

import os
from pathlib import Path

from negotiation.errors import ConfigError

ROOT_ENV = "NEGO_ROOT"
MARKERS = ("protocol/domains", "registry")
"""Folders a root holds (``protocol/domains``, not just ``protocol``: the package itself has a
``negotiation/protocol/`` and a ``negotiation/registry/``)."""
_PACKAGE_CHECKOUT = Path(__file__).resolve().parents[1]


def is_root(folder: Path) -> bool:
    """Whether ``folder`` holds ``protocol/domains/`` and ``registry/``."""
    return all((folder / marker).is_dir() for marker in MARKERS)


def _resolved(path: str) -> Path:
    """``path`` made absolute through its links; a loop or an unreadable step is a ``ConfigError``."""
    try:
        return Path(path).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise ConfigError(f"${ROOT_ENV}:{path}: cannot be resolved ({exc})") from exc


def find_root(start: Path | None = None) -> Path:
    """The repository root (see the module docstring); a clear error when there is none."""
    override = os.environ.get(ROOT_ENV)
    if override:
        root = _resolved(override)
        if not is_root(root):
            raise ConfigError(f"${ROOT_ENV}:{override}: not a repository root (needs protocol/ and registry/)")
        return root
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_root(folder):
            return folder
    if is_root(_PACKAGE_CHECKOUT):
        return _PACKAGE_CHECKOUT
    raise ConfigError(f"{here}:<root>: no folder holding protocol/ and registry/ here or above; run inside a "
                      f"checkout, pass --root, or set ${ROOT_ENV}")
