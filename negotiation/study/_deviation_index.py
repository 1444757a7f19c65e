"""The deviation log's index: every id ever issued, with the hash of its entry as issued.

``registry/<study>/deviations/index.yaml`` is written only by ``nego deviation new`` (which
appends one line per entry). It makes the log append-only in a way the audit can check: an
issued entry that is deleted (the newest one included: ids alone cannot tell), edited instead
of superseded, or added by hand without the index, is a finding. A pull request that also
rewrites the index shows in its diff of ``index.yaml``; CI can compare the index with the
target branch's, where every old line must be kept unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError

from negotiation._atomic import write_atomic
from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model, parse_yaml

__all__ = ["INDEX_FILE", "DeviationIndex", "IndexEntry", "append_to_index", "appended_only", "index_problems"]

INDEX_FILE = "index.yaml"
_HEADER = ("# Written by `nego deviation new`: one line per issued entry, never edited or removed.\n"
           "# The audit checks every listed entry is present and unchanged (amend by superseding).\n")


class IndexEntry(StrictModel):
    """One issued deviation entry."""

    id: int = Field(ge=1)
    """The entry's id."""
    file: str
    """Its file name in the deviations folder."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the file's bytes as issued."""


class DeviationIndex(StrictModel):
    """Every entry issued so far, in id order."""

    version: Literal[1] = 1
    """Index format version."""
    entries: tuple[IndexEntry, ...] = ()
    """Issued entries, oldest first."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read(folder: Path, root: Path | None) -> DeviationIndex | None:
    path = folder / INDEX_FILE
    return load_yaml_model(DeviationIndex, path, root=root) if path.exists() else None


def index_problems(folder: Path, entry_files: dict[int, Path], *, root: Path | None = None) -> list[str]:
    """``file:key: reason`` lines where the log departs from its index (``entry_files``: id -> file)."""
    shown = display_path(folder / INDEX_FILE, root)
    try:
        index = _read(folder, root)
    except ConfigError as exc:
        return str(exc).splitlines()
    if index is None:
        return [f"{shown}:<file>: missing; entries must be added with `nego deviation new`"] if entry_files else []
    problems, listed = [], {}
    for n, issued in enumerate(index.entries):  # (the ids' sequence is checked on the files themselves)
        if issued.id in listed:
            problems.append(f"{shown}:entries.{n}: entry {issued.id} is listed twice (an id is issued once)")
        listed[issued.id] = issued
        path = folder / issued.file
        if not path.is_file() or path.is_symlink():
            problems.append(f"{shown}:entries.{n}: entry {issued.id} ({issued.file}) was issued and is gone; "
                            "the log is append-only (supersede an entry instead of deleting it)")
        elif _sha256(path) != issued.sha256:
            problems.append(f"{display_path(path, root)}:<bytes>: changed since it was issued (sha256 "
                            f"{issued.sha256[:12]} in {shown}); amend by a superseding entry instead")
    for entry_id, path in sorted(entry_files.items()):
        if entry_id not in listed or listed[entry_id].file != path.name:
            problems.append(f"{display_path(path, root)}:id: entry {entry_id} is not in {shown} "
                            "(add entries with `nego deviation new`)")
    return problems


def append_to_index(folder: Path, entry_id: int, path: Path, *, root: Path | None = None) -> None:
    """Record the newly written entry ``path`` (atomically); a missing index starts from the folder."""
    index = _read(folder, root) or DeviationIndex()
    entries = list(index.entries) + [IndexEntry(id=entry_id, file=path.name, sha256=_sha256(path))]
    text = _HEADER + yaml.safe_dump(DeviationIndex(entries=tuple(entries)).model_dump(mode="json"),
                                    sort_keys=False, width=120)
    write_atomic(folder / INDEX_FILE, text)


def appended_only(before: str, folder: Path, *, root: Path | None = None) -> list[str]:
    """Where the index in ``folder`` drops or changes an entry of ``before`` (an earlier index's text).

    A pull request may append entries, never remove or edit one: CI runs this against the
    target branch's index (``nego deviation check-index STUDY --against REV``).
    """
    shown = display_path(folder / INDEX_FILE, root)
    try:
        old = DeviationIndex.model_validate(parse_yaml(before) or {})
        new = _read(folder, root) or DeviationIndex()
    except (yaml.YAMLError, ValidationError, ConfigError) as exc:
        return [f"{shown}:<file>: cannot compare ({' '.join(str(exc).split())[:200]})"]
    problems = []
    for n, entry in enumerate(old.entries):
        if n >= len(new.entries):
            problems.append(f"{shown}:entries.{n}: entry {entry.id} ({entry.file}) was removed from the index")
        elif new.entries[n] != entry:
            problems.append(f"{shown}:entries.{n}: entry {entry.id} ({entry.file}, sha256 {entry.sha256[:12]}) "
                            "was changed; the index only grows")
    return problems

