"""The lock: freeze a study's frozen files into ``protocol/<study>/lock.yaml`` and verify them.

The file and its hashes are ``_lockfile``'s; given a loaded ``Study`` these functions read its
frozen files without parsing the protocol again (``Study.lock_hash`` is the verified hash).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from negotiation.errors import ConfigError
from negotiation.study._layout import default_root
from negotiation.study._lockfile import FileLock, Lock, LockError, combined_hash, file_lock, lock_file_problems
from negotiation.study._study import Study, load_study

__all__ = ["FileLock", "Lock", "LockError", "checked_lock", "freeze", "lock_problems", "protocol_hash", "verify"]


def freeze(study: str, root: Path | None = None) -> Lock:
    """Validate ``study`` and write its lock file; refuse a study whose seed blocks overlap."""
    loaded = load_study(study, root, registry=False)
    overlaps = loaded.protocol.seed_overlaps()
    if overlaps:
        shown = loaded.show(loaded.dir / "protocol.yaml")
        raise ConfigError("\n".join(f"{shown}:seeds.{b}: overlaps seeds.{a}" for a, b in overlaps))
    files = {loaded.show(p): file_lock(p) for p in loaded.frozen_files()}
    lock = Lock(version=1, study=study, algorithm="sha256", protocol_hash=combined_hash(files), files=files)
    text = (f"# Written by `nego protocol freeze {study}`; do not edit. `nego protocol verify {study}`\n"
            "# recomputes these hashes. Key hashes locate a change inside a file.\n")
    text += yaml.safe_dump(lock.model_dump(mode="json"), sort_keys=False, width=120)
    loaded.lock_path.write_text(text, encoding="utf-8")
    return lock


def _coverage_problems(study: str | Study, root: Path, lock: Lock, shown_lock: str) -> list[str]:
    try:
        loaded = study if isinstance(study, Study) else load_study(study, root, registry=False)
    except ConfigError as exc:
        return [str(exc)]
    return loaded.lock_coverage(lock, shown_lock)


def checked_lock(study: str | Study, root: Path | None = None) -> tuple[Lock | None, list[str]]:
    """The lock and every difference between it and the frozen files (``file:key: reason`` lines).
    Given a loaded ``Study``, its frozen files are not parsed again."""
    name = study.name if isinstance(study, Study) else study
    root = study.root if isinstance(study, Study) else Path(root or default_root())
    return lock_file_problems(name, root, lambda lock, shown: _coverage_problems(study, root, lock, shown))


def lock_problems(study: str | Study, root: Path | None = None) -> list[str]:
    """Every difference between the frozen files and the lock, as ``file:key: reason`` lines."""
    return checked_lock(study, root)[1]


def verify(study: str | Study, root: Path | None = None) -> Lock:
    """Raise ``LockError`` listing every change since freeze; return the lock when intact."""
    lock, problems = checked_lock(study, root)
    if problems or lock is None:
        raise LockError("\n".join(problems))
    return lock


def protocol_hash(study: str | Study, root: Path | None = None) -> str:
    """The verified protocol hash of ``study``; every training and evaluation run records it
    (a loaded study's is ``Study.lock_hash``, computed once)."""
    return study.lock_hash if isinstance(study, Study) else verify(study, root).protocol_hash
