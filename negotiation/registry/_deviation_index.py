"""The deviation index against its git history (the audit's check; the index itself is
``negotiation.study``'s, read once with the study)."""

from __future__ import annotations

from pathlib import Path

from negotiation.study import INDEX_FILE, DeviationIndex, append_to_index, appended_only
from negotiation.registry._history import committed_versions, history_root

__all__ = ["INDEX_FILE", "DeviationIndex", "append_to_index", "appended_only", "history_problems"]


def history_problems(folder: Path, root: Path) -> list[str]:
    """Where the index on disk drops or changes a line of any committed version of it (git
    history of ``registry/``): an entry edited with its index line re-hashed, or the newest entry
    deleted with its line, agrees with its own index but not with the index as committed."""
    if not history_root(root):
        return []
    relative = (folder / INDEX_FILE).resolve().relative_to(Path(root).resolve()).as_posix()
    problems: list[str] = []
    for commit, text in committed_versions(root, relative):
        found = appended_only(text, folder, root=root)
        problems.extend(f"{line} (against commit {commit[:12]})" for line in found if line not in problems)
        if found:
            break  # the newest version it departs from says enough
    return problems
