"""Every command block of README.md, run as a user runs it on a fresh workspace: the tracked files
in a new git repository, with a ``.venv`` that holds this interpreter (``make`` finds its install
stamps current, so it installs nothing) and runs this checkout's code. A block the test must not
run carries ``<!-- readme-test: skip (reason) -->`` on the line above it, in the README itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(?:<!-- readme-test: skip \((?P<reason>[^)]+)\) -->\n)?```bash\n(?P<body>.*?)```", re.S)
SHIM = '#!/bin/sh\nexec "$(dirname "$0")/python" {what} "$@"\n'
SLOW_BLOCK = "make repro"


def readme_blocks(text: str) -> list[tuple[str, str | None]]:
    """``(commands, skip reason or None)`` per ```bash block, in order."""
    return [(m["body"], m["reason"]) for m in BLOCK.finditer(text)]


def fresh_workspace(where: Path) -> Path:
    """The tracked files under ``where``, committed in a new git repository, with ``.venv``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    for rel in filter(None, files.stdout.split("\0")):
        if (REPO / rel).is_file():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, where / rel)
    git = ["git", "-c", "user.name=readme", "-c", "user.email=readme@test", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=where, check=True)
    subprocess.run([*git, "add", "-A"], cwd=where, check=True)
    subprocess.run([*git, "commit", "-qm", "fresh"], cwd=where, check=True)
    bin_dir = where / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # a script, not a link: the venv's interpreter called by its own path keeps its site-packages
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    for name, what in (("nego", "-c 'from negotiation.cli import main; main()'"), ("dvc", "-m dvc"),
                       ("mlflow", "-m mlflow")):
        (bin_dir / name).write_text(SHIM.format(what=what))
        (bin_dir / name).chmod(0o755)
    for stamp in (".installed-pipeline", ".installed-llm", ".installed"):  # newer than pyproject and the lock
        (where / ".venv" / stamp).touch()
    return where


def _run(block: str, workspace: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(workspace), "NEGO_PROGRESS": "0"}
    env.pop("NEGO_ROOT", None)
    return subprocess.run(["bash", "-e", "-c", block], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=3600)


def test_every_block_is_run_or_skipped_with_a_reason_beside_it():
    blocks = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == (REPO / "README.md").read_text(encoding="utf-8").count("```bash")
    assert [reason for _, reason in blocks if reason] == [
        "make test runs the whole test suite, tests/test_readme.py included; CI runs it"]
    assert any(SLOW_BLOCK in body for body, _ in blocks)


def test_the_look_up_blocks_run_on_a_fresh_clone(tmp_path):
    """The blocks other than ``make repro`` need no outputs: a fresh clone answers them."""
    workspace = fresh_workspace(tmp_path)
    for body, reason in readme_blocks((REPO / "README.md").read_text(encoding="utf-8")):
        if reason or SLOW_BLOCK in body:
            continue
        done = _run(body, workspace)
        assert done.returncode == 0, (body, done.stdout[-2000:], done.stderr[-2000:])
        assert "audit: not run" in done.stdout and "demo: PASS" in done.stdout and "DEAL on turn 21" in done.stdout


@pytest.mark.slow
def test_every_block_runs_in_order_on_a_fresh_workspace(tmp_path):
    """``make repro`` (the demo pipeline, several minutes on two cores), then the look-ups over its
    outputs; then what CI checks of the built study: a second ``dvc repro`` runs no stage, and the
    results comply with the protocol. This is CI's one clean build of the demo."""
    workspace = fresh_workspace(tmp_path)
    for body, reason in readme_blocks((REPO / "README.md").read_text(encoding="utf-8")):
        if reason:
            continue
        done = _run(body, workspace)
        assert done.returncode == 0, (body, done.stdout[-2000:], done.stderr[-2000:])
    assert (workspace / "outputs/demo/report/report.html").is_file()
    assert "audit: passed" in done.stdout and "report: outputs/demo/report/report.html" in done.stdout
    noop = _run('PATH="$PWD/.venv/bin:$PATH" dvc repro', workspace)
    assert noop.returncode == 0 and "Running stage" not in noop.stdout + noop.stderr, noop.stdout[-2000:]
    audit = _run(".venv/bin/nego audit demo --results outputs/demo", workspace)
    assert audit.returncode == 0, (audit.stdout[-2000:], audit.stderr[-2000:])
    report = (workspace / "outputs/demo/report/report.md").read_text(encoding="utf-8")
    panel = report[report.index("**Exploratory buyer panel (registry)"):]  # the ANAC panel, built by dvc repro
    assert "AI assistance" in panel.split("\n")[0] and "| w128_lr3x | 32 | 0 |" in panel
