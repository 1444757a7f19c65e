"""The registry's sign-offs against git history (the audit's check). ``Registry``, ``SignOff`` and
``load_registry`` are ``negotiation.study``'s: the study reads ``registry/<study>/`` once."""

from __future__ import annotations

from pathlib import Path

from negotiation.study import Registry, SignOff, load_registry
from negotiation.registry._history import gone_since_committed, history_root

__all__ = ["Registry", "SignOff", "deleted_signoffs", "load_registry"]


def deleted_signoffs(folder: Path, root: Path) -> list[str]:
    """A sign-off ever committed and now gone is a finding: deleting one turned a trained arm's
    guard from read to "pending", which passes (git history of ``registry/``; none outside git)."""
    if not history_root(root):
        return []
    relative = folder.resolve().relative_to(root.resolve()).as_posix()
    return [f"{name}:<file>: was committed and is gone; a sign-off is never deleted (record a new one, "
            "or a deviation)" for name in gone_since_committed(root, relative)]
