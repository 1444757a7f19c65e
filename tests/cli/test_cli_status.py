"""``nego status`` as its users meet it: after the pipeline's audit stage has written audit.json,
the status line agrees with ``nego audit``'s verdict, for demo and lm, passing and failing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_runner import nego

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch) -> Path:
    """A checkout's data and stage scripts, without outputs (as on a fresh clone)."""
    monkeypatch.setenv("NEGO_ROOT", str(tmp_path))  # restored after the test (``--root`` sets it)
    for part in ("protocol", "registry", "pipelines"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    return tmp_path


def _audit_stage(root: Path, study: str) -> int:
    """The ``audit`` stage's command as dvc.yaml runs it, in ``root``."""
    out = f"outputs/{study}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NEGO_ROOT", None)
    done = subprocess.run([sys.executable, "pipelines/audit.py", "--study", study, "--results", out,
                           "--out", f"{out}/audit.json"], cwd=root, env=env, capture_output=True, text=True)
    return done.returncode


def _status_audit_line(root: Path, study: str) -> str:
    result = nego("--root", str(root), "status", study)
    assert result.exit_code == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if line.startswith("audit: "))


@pytest.mark.parametrize("study", ["demo", "lm"])
def test_status_says_passed_when_nego_audit_passes(checkout, study):
    assert _status_audit_line(checkout, study) == "audit: not run"
    assert _audit_stage(checkout, study) == 0
    assert nego("--root", str(checkout), "audit", study).exit_code == 0
    assert _status_audit_line(checkout, study) == "audit: passed"


def test_status_says_failed_when_nego_audit_fails(checkout, edit):
    # a frozen number changed without re-freezing: the protocol lock check fails the audit
    edit(checkout / "protocol/demo/protocol.yaml", "no_deal_penalty: 0.3 ", "no_deal_penalty: 0.4 ")
    assert _audit_stage(checkout, "demo") != 0
    assert nego("--root", str(checkout), "audit", "demo").exit_code == 1
    assert _status_audit_line(checkout, "demo") == "audit: FAILED"


@pytest.mark.parametrize("columns", ["40", "80"])
def test_a_narrow_terminal_shows_every_arm_name_whole(checkout, monkeypatch, columns):
    from negotiation.study import load_study

    monkeypatch.setenv("COLUMNS", columns)
    for study in ("demo", "paper"):
        result = nego("--root", str(checkout), "status", study)
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert all(len(line.rstrip()) <= int(columns) for line in lines)
        for arm in load_study(study, checkout).arms:
            assert arm in lines, f"{arm} not on a line of its own at {columns} columns"
        assert "…" not in result.stdout


def test_a_wide_terminal_shows_one_table_row_per_arm(checkout, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    lines = nego("--root", str(checkout), "status", "demo").stdout.splitlines()
    assert any(line.split()[:3] == ["arm", "kind", "frozen"] for line in lines if line.strip())
    row = next(line for line in lines if line.split()[:1] == ["w16_shared_cont"])
    assert "branched from w16_shared_init at 64" in row and row.split()[-4:] == ["no", "no", "no", "no"]
