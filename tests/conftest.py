"""Fixtures shared by the test packages: a private copy of the protocol and registry data, safe to tamper with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from negotiation.protocol import default_root

REPO = default_root()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """``tmp_path`` holding protocol/ (domains, demo, paper) and registry/ as committed."""
    for part in ("protocol", "registry"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def edit():
    """``edit(path, old, new)``: replace the one exact occurrence of ``old`` in a file."""
    return _edit
