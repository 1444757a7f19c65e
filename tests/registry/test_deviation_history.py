"""The audit checks the deviation log and sign-offs against their own history: an old entry edited
with its index line re-hashed, the newest entry deleted with its index line, a date in the future,
a duplicate index line, a FIFO or folder named like an entry, a deleted sign-off: each fails
``nego audit`` itself, naming the file (``deviation check-index --against`` saw only the first two)."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import subprocess

import pytest

from negotiation.registry import run_audit

DEVIATIONS = "registry/paper/deviations"


def _commit(root):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "registry"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)


def _failures(root, check):
    report = run_audit("paper", root=root)
    return [f.evidence for f in report.findings if f.check == check and f.status == "fail"]


def _rehash(root, name):
    index = root / DEVIATIONS / "index.yaml"
    text = index.read_text()
    line = next(line for line in text.splitlines() if line.strip() == f"file: {name}")
    old = text.split(line, 1)[1].split("sha256: ", 1)[1].split("\n", 1)[0]
    new = hashlib.sha256((root / DEVIATIONS / name).read_bytes()).hexdigest()
    index.write_text(text.replace(old, new))


@pytest.fixture
def git_root(root):
    _commit(root)
    assert run_audit("paper", root=root).passed
    return root


def test_an_old_entry_edited_with_its_index_line_rehashed_fails(git_root):
    name = sorted(p.name for p in (git_root / DEVIATIONS).glob("0004-*.yaml"))[0]
    path = git_root / DEVIATIONS / name
    path.write_text(path.read_text().replace("why:", "why: (edited)", 1))
    _rehash(git_root, name)
    failed = _failures(git_root, "deviation_ids")
    assert any("index.yaml:entries.3:" in line and name in line and "changed" in line for line in failed), failed


def test_the_newest_entry_deleted_with_its_index_line_fails(git_root):
    index = git_root / DEVIATIONS / "index.yaml"
    newest = sorted((git_root / DEVIATIONS).glob("0*.yaml"))[-1]
    newest.unlink()
    text = index.read_text()
    index.write_text(text[:text.rindex("- id:")])
    failed = _failures(git_root, "deviation_ids")
    assert any(newest.name in line and "removed" in line for line in failed), failed


def test_a_date_in_the_future_fails_even_outside_git(root):
    path = sorted((root / DEVIATIONS).glob("0*.yaml"))[-1]
    text = path.read_text()
    old = next(line for line in text.splitlines() if line.startswith("date:"))
    path.write_text(text.replace(old, "date: '2999-01-01'"))
    _rehash(root, path.name)
    failed = _failures(root, "deviation_ids")
    assert any(f"{path.name}:date: 2999-01-01 is in the future" in line for line in failed), failed
    assert dt.date(2999, 1, 1) > dt.date.today()


def test_a_duplicate_index_entry_fails(root):
    index = root / DEVIATIONS / "index.yaml"
    text = index.read_text()
    first = text[text.index("- id: 1"):text.index("- id: 2")]
    index.write_text(text + first)
    failed = _failures(root, "deviation_ids")
    assert any("index.yaml:entries." in line and "listed twice" in line for line in failed), failed


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_fifo_or_folder_named_like_an_entry_fails(root, kind):
    path = root / DEVIATIONS / "0099-not-an-entry.yaml"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    failed = _failures(root, "registry_files")
    assert any("0099-not-an-entry.yaml:<file>: not a regular file" in line for line in failed), failed


def test_a_deleted_signoff_fails_instead_of_pending(git_root):
    signoff = sorted((git_root / "registry/paper/signoffs").glob("*.yaml"))[0]
    signoff.unlink()
    failed = _failures(git_root, "registry_files")
    assert any(f"signoffs/{signoff.name}:<file>: was committed and is gone" in line for line in failed), failed
    assert not run_audit("paper", root=git_root).passed
