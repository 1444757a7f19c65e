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


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_target_that_is_no_regular_file_is_refused_naming_it(tmp_path, kind):
    import os

    from negotiation.errors import ConfigError

    target = tmp_path / "accounting.json"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    with pytest.raises(ConfigError, match=f"accounting.json:<file>: a {'FIFO' if kind == 'fifo' else 'folder'}"):
        write_atomic(target, "{}")  # a FIFO was replaced unasked; a folder failed with IsADirectoryError
    assert [p.name for p in tmp_path.iterdir()] == ["accounting.json"]


def test_a_link_is_replaced_by_the_file(tmp_path):
    (tmp_path / "cache").write_text("cached")
    (tmp_path / "out.json").symlink_to(tmp_path / "cache")
    write_atomic(tmp_path / "out.json", "new")
    assert (tmp_path / "out.json").read_text() == "new" and (tmp_path / "cache").read_text() == "cached"
