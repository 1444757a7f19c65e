"""Atomic file writes: a reader sees the old file or the new one, never a part, and a failed write
(a full disk, an interrupt) leaves neither a half file nor a stray temporary one behind.

The temporary file sits beside the target (same filesystem, so ``os.replace`` is atomic) under a
hidden name with the writer's pid, which readers that list a folder skip.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "write_atomic"]


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``, on any failure it is removed."""
    path = Path(path)
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
