"""What a results store's episodes were produced with, and moving aside a store produced otherwise.

A store (``shards/`` and its compacted tables) holds the episodes of ONE fingerprint: what decides
them, and nothing else: the seller's spec and the hash of the weights it loads, the buyers'
specs, the sampling settings (the seller's effective sampling role, what each agent sends), the
protocol hash and the prompt templates' hashes. ``fingerprint.json`` beside the shards records
it. The same inputs give the same fingerprint however the run was started: ``nego evaluate`` by
hand with an arm's spec resumes the pipeline's episodes of that arm.

Resuming a store that was produced under another fingerprint would silently mix two experiments
in one table, and deleting it would throw away paid episodes, so such a store is moved aside,
whole, to ``superseded/<old digest>-<UTC time>/`` (a store written before fingerprints existed
is moved aside the same way) and the run starts an empty store, unless a superseded store
matches the new fingerprint: that one is moved back and resumed, never bought again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from negotiation._atomic import write_atomic
from negotiation.errors import ConfigError

FINGERPRINT_FILE = "fingerprint.json"
SUPERSEDED_DIR = "superseded"
STORE_ENTRIES = ("shards", "episodes.parquet", "turns.parquet", FINGERPRINT_FILE)
"""What moves aside together: the shards, their compacted tables and the fingerprint."""

log = logging.getLogger(__name__)


class StoreFingerprint(BaseModel):
    """The inputs that decide a store's episodes (not its seeds or domains: those are in the keys)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[2] = 2
    """Fingerprint format version (1 named the hash of ``select/<arm>/seller.json``, null ad hoc)."""
    seller: str
    """Seller agent spec."""
    seller_weights_sha256: str | None = None
    """``folder_sha256`` of the weights the seller spec loads (``seller_weights_sha256``); null
    for a seller without local weights (scripted, hosted)."""
    buyers: dict[str, str]
    """Buyer label -> agent spec."""
    sampling: dict[str, Any]
    """Sampling: the protocol's settings per role and what each prompted agent plans to send."""
    protocol_hash: str
    """Hash of the frozen protocol the episodes are played under."""
    prompt_hash: str
    """Prompt template hashes of the prompted agents ('' for scripted-only cells)."""

    @property
    def digest(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON."""
        return _digest_of(self.model_dump(mode="json"))


def _differences(old: dict[str, Any], new: StoreFingerprint) -> list[str]:
    fresh = new.model_dump(mode="json")
    return sorted(k for k in set(old) | set(fresh) if old.get(k) != fresh.get(k))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}:<file>: unreadable store fingerprint ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:<file>: expected a JSON object, got {type(data).__name__}")
    return data


def _write(path: Path, fingerprint: StoreFingerprint) -> None:
    payload = {**fingerprint.model_dump(mode="json"), "digest": fingerprint.digest}
    write_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def refuse_links(root: Path) -> None:
    """A store never follows a link out of its results folder: ``ConfigError`` when the store folder,
    its parent (e.g. ``pilot/``) or a folder it writes into (``shards/``, ``superseded/``) is one."""
    root = Path(root)
    for folder in (root.parent, root, root / "shards", root / SUPERSEDED_DIR):
        if folder.is_symlink():
            raise ConfigError(f"{folder}:<folder>: a symlink; results folders do not follow links out of themselves")


def move_aside(root: Path, label: str) -> Path | None:
    """Move the store's entries under ``root`` to ``superseded/<label>-<UTC time>/``; None if empty."""
    refuse_links(root)
    present = [root / name for name in STORE_ENTRIES if (root / name).exists()]
    if not present:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = root / SUPERSEDED_DIR / f"{label}-{stamp}"
    suffix = 1
    while target.exists():
        target, suffix = root / SUPERSEDED_DIR / f"{label}-{stamp}-{suffix}", suffix + 1
    target.mkdir(parents=True)
    for entry in present:
        os.replace(entry, target / entry.name)
    return target


def matches(old: dict[str, Any], new: StoreFingerprint, legacy_seller_sha256: str | None = None) -> bool:
    """Whether a stored fingerprint (``fingerprint.json``'s object) names ``new``'s inputs.

    A version-1 fingerprint named the hash of ``select/<arm>/seller.json`` (spec and weights'
    hash) instead of the weights' hash: it matches when that record is ``legacy_seller_sha256``
    (or both name no weights: null ad hoc, a seller without local weights) and the rest is equal.
    """
    old = {k: v for k, v in old.items() if k != "digest"}
    fresh = new.model_dump(mode="json")
    if old.get("version") != 1:
        return old == fresh
    record = old.pop("seller_sha256", None)
    same_seller = (record is not None and record == legacy_seller_sha256) or \
        (record is None and new.seller_weights_sha256 is None)
    rest = {k: v for k, v in fresh.items() if k not in ("version", "seller_weights_sha256")}
    return same_seller and {k: v for k, v in old.items() if k != "version"} == rest


def adopt_fingerprint(root: Path, fingerprint: StoreFingerprint, *,
                      legacy_seller_sha256: str | None = None) -> Path | None:
    """Make the store under ``root`` one of ``fingerprint``: keep it when it matches, else move it
    aside (never delete) and move back a superseded store that matches, if any. Returns where a
    superseded store went, or None. ``legacy_seller_sha256``: see ``matches``."""
    root = Path(root)
    path = root / FINGERPRINT_FILE
    moved = None
    if path.exists():
        old = _read(path)
        if matches(old, fingerprint, legacy_seller_sha256):
            if old.get("version") != fingerprint.version:
                _write(path, fingerprint)  # the same inputs, named the current way
            return None
        old.pop("digest", None)
        moved = move_aside(root, str(_digest_of(old)))
        reason = f"its fingerprint differs in {', '.join(_differences(old, fingerprint))}"
    elif (root / "shards").exists():
        moved = move_aside(root, "unfingerprinted")
        reason = "it has no fingerprint.json (written by an older version)"
    if moved is not None:
        log.warning("results store %s was produced with other inputs (%s): moved it to %s", root, reason, moved)
    restored = _restore(root, fingerprint, legacy_seller_sha256)
    if restored is not None:
        log.warning("results store %s: reusing the episodes of %s, produced with the same inputs", root, restored)
    root.mkdir(parents=True, exist_ok=True)
    _write(path, fingerprint)
    return moved


def _restore(root: Path, fingerprint: StoreFingerprint, legacy_seller_sha256: str | None) -> Path | None:
    """Move back the newest superseded store whose fingerprint matches (the store root is empty
    now); None when there is none."""
    superseded = root / SUPERSEDED_DIR
    if not superseded.is_dir() or any((root / name).exists() for name in STORE_ENTRIES):
        return None
    for folder in sorted(superseded.iterdir(), key=_age, reverse=True):
        stored = folder / FINGERPRINT_FILE
        if folder.is_symlink() or not folder.is_dir() or not stored.is_file() or stored.is_symlink():
            continue
        if not matches(_read(stored), fingerprint, legacy_seller_sha256):
            continue
        for name in STORE_ENTRIES:
            if (folder / name).exists():
                os.replace(folder / name, root / name)
        if not any(folder.iterdir()):
            folder.rmdir()
        return folder
    return None


def _age(folder: Path) -> tuple[float, str]:
    """Newest first: when the folder was moved aside (its mtime), then its name."""
    try:
        return folder.lstat().st_mtime, folder.name
    except OSError:
        return 0.0, folder.name


def _digest_of(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
