"""Atomic file writes: a reader sees the old file or the new one, never a part, and a failed write
(a full disk, an interrupt) leaves neither a half file nor a stray temporary one behind.

The target must be a regular file (or a link, replaced by the file) or absent: a FIFO or a folder
at its name is a ``ConfigError`` naming it, before anything is written (writing into a FIFO blocks
until someone reads it; a folder cannot be replaced by a file).

The temporary file sits beside the target (same filesystem, so ``os.replace`` is atomic) under a
hidden name with the writer's pid, which readers that list a folder skip.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from negotiation.errors import ConfigError

__all__ = ["atomic_path", "refuse_non_regular", "write_atomic"]


def refuse_non_regular(path: Path | str) -> None:
    """``ConfigError`` when ``path`` exists and is neither a regular file nor a link."""
    path = Path(path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ConfigError(f"{path}:<file>: {kind}; only a regular file is replaced")


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``, on any failure it is removed."""
    path = Path(path)
    refuse_non_regular(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone already after a successful replace


def write_atomic(path: Path | str, text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``fsync`` first flushes it to the disk (for
    records a SIGKILL or power loss must not turn into an empty file)."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        if fsync:
            handle.flush()
            os.fsync(handle.fileno())
    return path
