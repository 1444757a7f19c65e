"""The lock file: ``protocol/<study>/lock.yaml`` holds the hash of every frozen file.

Besides each file's SHA-256 the lock keeps a hash of every key down to depth two (e.g.
``training`` and ``training.learning_rate``), so ``verify`` can say *which* key of a frozen
file changed, not only that its bytes did. The protocol hash that every run records is one
SHA-256 over the sorted ``path, file hash`` pairs. This module reads and compares the file;
``_lock`` (freeze, verify) and ``Study.lock_hash`` call it with the study's frozen files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Literal

import yaml

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model, parse_yaml
from negotiation.protocol import yaml_reason
from negotiation.study._layout import study_dir

__all__ = ["LOCK_FILE", "FileLock", "Lock", "LockError", "combined_hash", "file_lock", "lock_file_problems"]

LOCK_FILE = "lock.yaml"

_KEY_DEPTH = 2


class LockError(ConfigError):
    """A frozen file differs from its lock, or the lock is missing or incomplete."""


class FileLock(StrictModel):
    """Hashes of one frozen file."""

    sha256: str
    """SHA-256 of the file's bytes."""
    keys: dict[str, str]
    """SHA-256 of the canonical JSON of each key path down to depth two."""


class Lock(StrictModel):
    """``protocol/<study>/lock.yaml``."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study the lock belongs to."""
    algorithm: Literal["sha256"]
    """Hash function."""
    protocol_hash: str
    """SHA-256 over the sorted (path, file hash) pairs: the hash every run records."""
    files: dict[str, FileLock]
    """Root-relative POSIX path of each frozen file and its hashes."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key_hashes(value: Any, prefix: str = "", depth: int = 1) -> dict[str, str]:
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list) and prefix:
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return {}
    hashes = {}
    for key, child in items:
        path = f"{prefix}.{key}" if prefix else key
        hashes[path] = _sha256(json.dumps(child, sort_keys=True, default=str).encode())
        if depth < _KEY_DEPTH:
            hashes.update(_key_hashes(child, path, depth + 1))
    return hashes


def file_lock(path: Path) -> FileLock:
    data = path.read_bytes()
    try:
        parsed = parse_yaml(data)
    except yaml.YAMLError:
        parsed = None
    return FileLock(sha256=_sha256(data), keys=_key_hashes(parsed) if isinstance(parsed, dict) else {})


def _parse_problem(path: Path) -> str | None:
    """``key: reason`` when ``path`` is not plain YAML any more, else ``None``."""
    try:
        parse_yaml(path.read_bytes())
    except yaml.YAMLError as exc:
        return yaml_reason(exc)
    return None


def combined_hash(files: dict[str, FileLock]) -> str:
    lines = "".join(f"{path}\0{lock.sha256}\n" for path, lock in sorted(files.items()))
    return _sha256(lines.encode())


def _changed_keys(locked: FileLock, now: FileLock) -> list[str]:
    changed = {k for k in locked.keys.keys() | now.keys.keys() if locked.keys.get(k) != now.keys.get(k)}
    # Report the deepest changed paths: "training.learning_rate" rather than also "training".
    deepest = sorted(k for k in changed if not any(other.startswith(k + ".") for other in changed))
    return deepest or ["<bytes>"]


def _load_lock(study: str, root: Path) -> tuple[Lock, str]:
    path = study_dir(study, root) / LOCK_FILE
    shown = display_path(path, root)
    if not path.exists():
        raise LockError(f"{shown}:<file>: no lock; run `nego protocol freeze {study}`")
    lock = load_yaml_model(Lock, path, root=root)
    if lock.study != study:
        raise LockError(f"{shown}:study: {lock.study!r} differs from {study!r}")
    return lock, shown


def lock_file_problems(name: str, root: Path,
                       coverage: Callable[[Lock, str], list[str]]) -> tuple[Lock | None, list[str]]:
    """The lock of study ``name`` and every difference between it and the frozen files (``file:key:
    reason`` lines); ``coverage(lock, shown_lock)`` adds the frozen files the lock misses or names
    wrongly (checked only when the hashes match)."""
    try:
        lock, shown_lock = _load_lock(name, root)
    except ConfigError as exc:
        return None, str(exc).splitlines()
    problems = []
    for rel, locked in sorted(lock.files.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}:<file>: frozen file is missing (locked in {shown_lock})")
            continue
        now = file_lock(path)
        if now.sha256 != locked.sha256:
            if (unreadable := _parse_problem(path)) is not None:  # the real problem, not every key
                problems.append(f"{rel}:{unreadable}")
                continue
            for key in _changed_keys(locked, now):
                problems.append(f"{rel}:{key}: changed since freeze (sha256 {locked.sha256[:12]} in "
                                f"{shown_lock}, now {now.sha256[:12]})")
    if combined_hash(lock.files) != lock.protocol_hash:
        problems.append(f"{shown_lock}:protocol_hash: does not match the file hashes it lists")
    if not problems:
        problems = coverage(lock, shown_lock)
    return lock, problems
