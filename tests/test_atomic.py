"""Atomic writes leave the old file or the new one, and no temporary file, whatever fails."""

from __future__ import annotations

import pytest

from negotiation._atomic import atomic_path, write_atomic


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "record.json"
    target.write_text("old")
    write_atomic(target, "new", fsync=True)
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    """A full disk used to leave zero-byte .tmp files behind in results folders."""
    target = tmp_path / "episodes.parquet"
    target.write_text("old")
    with pytest.raises(OSError, match="No space left"):
        with atomic_path(target) as tmp:
            tmp.write_text("")  # the writer got as far as creating the file
            raise OSError(28, "No space left on device")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["episodes.parquet"]
