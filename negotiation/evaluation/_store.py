"""The results store: append-only, atomic episode shards, compacted to Parquet.

Layout under the output folder::

    shards/<arm>/<domain>-<seed>-<digest>.a<NNN>.<ok|error>.json   one per finished attempt
    episodes.parquet, turns.parquet                                  compacted, one row per key

A shard holds one episode row and its turn rows, keyed by ``(arm, domain, seed, buyer)``
(``digest`` hashes the key, so buyer specs with any characters make safe names). It is written
to a temporary file, fsynced and renamed into place, so a crash (even SIGKILL) leaves either
the whole shard or none: at most the episodes in flight are lost. Shards are never edited or
deleted. A rerun skips keys whose latest attempt is ``ok``; ``retry_errors`` reruns keys whose
latest attempt is ``error`` as attempt ``n + 1``. Compaction keeps the latest attempt per key,
so nothing is ever duplicated; it is deterministic (rows sorted by key, then turn) and also
atomic. A lock file keeps two processes from writing one store at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from negotiation._atomic import atomic_path, write_atomic
from negotiation.agents import redact_obj_with, redactor
from negotiation.env import KEY
from negotiation.errors import ConfigError, NegotiationError
from negotiation.evaluation._fingerprint import refuse_links

SHARD_VERSION = 1
Key = tuple[str, str, int, str]
_SHARD_NAME = re.compile(r"^(?P<domain>[a-z0-9_]+)-(?P<seed>\d+)-(?P<digest>[0-9a-f]{16})\.a(?P<attempt>\d{3})"
                         r"\.(?P<status>ok|error)\.json$")


class StoreLockedError(NegotiationError):
    """Another process is writing this results store."""


def key_digest(key: Key) -> str:
    return hashlib.sha256(json.dumps(list(key)).encode("utf-8")).hexdigest()[:16]


def _safe(text: str) -> str:
    """A folder name for an arm (which may be a whole agent spec); never ``.``, ``..`` or hidden."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "_"
    return "_" + name if name.startswith(".") else name


_INT64 = (-(2**63), 2**63 - 1)
_TABLE_ERRORS = (ValueError, TypeError, OverflowError, UnicodeError)  # pyarrow's errors subclass these


def _value_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a Parquet cell, or ``None``."""
    if value is None or isinstance(value, (bool, float, np.bool_, np.floating)):
        return None
    if isinstance(value, (int, np.integer)):
        return None if _INT64[0] <= value <= _INT64[1] else f"a {int(value).bit_length()}-bit integer does not fit 64 bits"
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "text that cannot be stored as UTF-8"
        return None
    return f"a {type(value).__name__} is not a table value"


def record_problem(episode: dict[str, Any], turns: list[dict[str, Any]]) -> str | None:
    """The first value of an episode's rows that no table could store, described, or ``None``."""
    for where, row in (("episode", episode), *((f"turn {i}", t) for i, t in enumerate(turns, 1))):
        for column, value in row.items():
            if (problem := _value_problem(value)) is not None:
                return f"{where} column {column}: {problem}"
    return None


def invalid_record(episode: dict[str, Any], problem: str) -> dict[str, Any]:
    """The error row standing for an episode whose rows cannot be stored (bad values blanked)."""
    row = {column: None if _value_problem(value) else value for column, value in episode.items()}
    row.update(outcome="error", deal=False, error_class="InvalidRecord", error_message=problem)
    return row


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


@dataclass(frozen=True)
class Attempt:
    """The latest stored attempt of one key."""

    attempt: int
    status: str
    """``ok`` or ``error``."""
    path: Path


class ResultsStore:
    """Episode shards and their compacted tables under one folder."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        refuse_links(self.root)
        self.shards = self.root / "shards"

    def _shard_path(self, key: Key, attempt: int, status: str) -> Path:
        arm, domain, seed, _ = key
        return self.shards / _safe(arm) / f"{domain}-{seed}-{key_digest(key)}.a{attempt:03d}.{status}.json"

    def scan(self) -> dict[str, Attempt]:
        """``digest -> latest attempt`` of every key with a shard (temporary files are ignored)."""
        latest: dict[str, Attempt] = {}
        if not self.shards.is_dir():
            return latest
        for path in self._shard_files():
            m = _SHARD_NAME.match(path.name)
            if m is None:
                continue
            found = Attempt(int(m.group("attempt")), m.group("status"), path)
            current = latest.get(m.group("digest"))
            if current is None or found.attempt > current.attempt:
                latest[m.group("digest")] = found
        return latest

    def _shard_files(self) -> Iterator[Path]:
        """Shard files under ``shards/<arm>/``; symlinks (folders or files) are never followed."""
        for arm_dir in sorted(self.shards.iterdir()):
            if arm_dir.is_dir() and not arm_dir.is_symlink():
                yield from (p for p in arm_dir.glob("*.json") if not p.is_symlink())

    def plan(self, keys: list[Key], *, retry_errors: bool) -> tuple[list[tuple[Key, int]], dict[str, int]]:
        """``([(key, attempt to run)], counts)``: what a (re)run must play, in ``keys`` order."""
        latest = self.scan()
        todo: list[tuple[Key, int]] = []
        counts = {"done": 0, "errors_kept": 0, "errors_retried": 0, "new": 0}
        for key in keys:
            prior = latest.get(key_digest(key))
            if prior is None:
                todo.append((key, 1))
                counts["new"] += 1
            elif prior.status == "ok":
                counts["done"] += 1
            elif retry_errors:
                todo.append((key, prior.attempt + 1))
                counts["errors_retried"] += 1
            else:
                counts["errors_kept"] += 1
        return todo, counts

    def write(self, key: Key, attempt: int, episode: dict[str, Any], turns: list[dict[str, Any]]) -> Path:
        """Store one finished attempt atomically; the status follows ``episode['outcome']``.

        Rows are checked first: an episode with a value no table can hold (a 100-bit token
        count, a list, unstorable text) is stored as an ``InvalidRecord`` error, never as ``ok``
        (a rerun with ``retry_errors`` plays it again; compaction cannot be poisoned).
        """
        if (problem := record_problem(episode, turns)) is not None:
            episode, turns = invalid_record(episode, problem), []
        status = "error" if episode.get("outcome") == "error" else "ok"
        path = self._shard_path(key, attempt, status)
        clean = redactor()
        payload = {"version": SHARD_VERSION, "key": dict(zip(KEY, key)), "attempt": attempt,
                   "episode": redact_obj_with(episode, clean), "turns": redact_obj_with(turns, clean)}
        # Strings are redacted one by one (robust to JSON escaping), then the text once more.
        text = clean(json.dumps(payload, ensure_ascii=False, default=_jsonable))
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent.is_symlink() or path.parent.parent.is_symlink():
            raise ConfigError(f"{path.parent}:<folder>: a symlink; results folders do not follow links out of themselves")
        return write_atomic(path, text, fsync=True)

    def _read(self, path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}:<file>: unreadable shard ({exc})") from exc
        if data.get("version") != SHARD_VERSION:
            raise ConfigError(f"{path}:version: expected {SHARD_VERSION}, got {data.get('version')!r}")
        return data

    def latest_shards(self) -> Iterator[dict[str, Any]]:
        for found in self.scan().values():
            yield self._read(found.path)

    def frames(self, *, validate: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(episodes, turns)``: the latest attempt per key, sorted by key (and turn).

        ``validate``: a stored shard whose rows no table can hold (written by an older version)
        becomes its ``InvalidRecord`` error row; without it, that happens only when the tables
        cannot be built otherwise.
        """
        shards = sorted(self.latest_shards(), key=lambda s: tuple(s["key"][k] for k in KEY))
        if not validate:
            try:
                return _frames_of(shards)
            except _TABLE_ERRORS:  # an unstorable value in some shard: validate them all
                validate = True
        for shard in shards:
            if (problem := record_problem(shard["episode"], shard["turns"])) is not None:
                shard["episode"], shard["turns"] = invalid_record(shard["episode"], problem), []
        return _frames_of(shards)

    def compact(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Write ``episodes.parquet`` and ``turns.parquet`` (each atomically) and return them.

        Never fails on what is stored: if the tables cannot be written, the shards are read
        again with ``validate`` (unstorable episodes become error rows) and written.
        """
        episodes, turns = self.frames()
        try:
            self._write_tables(episodes, turns)
        except _TABLE_ERRORS:
            episodes, turns = self.frames(validate=True)
            self._write_tables(episodes, turns)
        return episodes, turns

    def _write_tables(self, episodes: pd.DataFrame, turns: pd.DataFrame) -> None:
        for frame, name in ((episodes, "episodes.parquet"), (turns, "turns.parquet")):
            with atomic_path(self.root / name) as tmp:
                frame.to_parquet(tmp, index=False)

    def lock(self) -> _StoreLock:
        """An exclusive lock on the store (released when the process dies, even by SIGKILL)."""
        return _StoreLock(self.root / ".lock")


def _frames_of(shards: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [s["episode"] for s in shards]
    order = next((list(r) for r in rows if r.get("outcome") != "error"), [])
    episodes = pd.DataFrame(rows)
    if not episodes.empty:
        columns = order + [c for c in episodes.columns if c not in order]
        episodes = episodes[columns].reset_index(drop=True)
    turns = pd.DataFrame([t for s in shards for t in s["turns"]])
    return episodes, turns


class _StoreLock:
    def __init__(self, path: Path):
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> _StoreLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.close()
            raise StoreLockedError(f"{self.path}:<lock>: another process is writing this results store") from None
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def nan_to_none(value: Any) -> Any:
    """JSON-friendly scalar (NaN becomes None) for summaries."""
    return None if isinstance(value, float) and math.isnan(value) else value
