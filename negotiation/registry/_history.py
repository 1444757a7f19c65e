"""The registry against its own git history: what was committed is never edited or removed.

The deviation index (``index.yaml``) lists every issued entry with the hash of its bytes; on its
own, an edit that re-hashes its index line, or a deletion of the newest entry together with its
line, leaves a log that agrees with itself. Every committed version of the index is kept in git,
so the audit compares the index on disk with each of them (``appended_only``: an old line changed
or dropped is a finding), and a sign-off ever committed that is gone from disk is one too.

Outside a git checkout (a tarball, a copy) there is no history to read and these checks are
skipped; the index's own checks still run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["committed_versions", "gone_since_committed", "history_root"]

_TIMEOUT_S = 30


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS`` stdout, or None when git is absent or the command fails."""
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def history_root(root: Path) -> bool:
    """Whether ``root`` is the top of a git checkout with at least one commit."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != Path(root).resolve():
        return False
    return _git(root, "rev-parse", "--verify", "--quiet", "HEAD") is not None


def committed_versions(root: Path, relative: str) -> list[tuple[str, str]]:
    """``(commit, text)`` of every committed version of the file ``relative``, newest first."""
    commits = _git(root, "log", "--format=%H", "--", relative)
    versions = []
    for commit in (commits or "").split():
        text = _git(root, "show", f"{commit}:{relative}")
        if text is not None:  # None: the commit deleted it
            versions.append((commit, text))
    return versions


def gone_since_committed(root: Path, relative_folder: str) -> list[str]:
    """Files ever committed under ``relative_folder`` that are not on disk (repository-relative)."""
    added = _git(root, "log", "--diff-filter=A", "--no-renames", "--name-only", "--format=", "--", relative_folder)
    names = sorted({name for name in (added or "").splitlines() if name.strip()})
    return [name for name in names if not (Path(root) / name).exists()]
