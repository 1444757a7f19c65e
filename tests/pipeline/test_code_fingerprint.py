"""The code stages' script, ``pipelines/fingerprint.py``: ``sha256sum`` lines of the code a stage
kind runs, in path order, changing with a code file's content and never with bytecode."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from negotiation.study import default_root

ROOT = default_root()


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "pipelines/fingerprint.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _code(tmp_path: Path) -> None:
    for rel, text in {"pkg/__init__.py": "", "pkg/b.py": "B = 1\n", "pkg/sub/a.py": "A = 1\n",
                      "pkg/data.json": "{}\n", "top.py": "import pkg\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)


def test_lists_every_file_once_in_path_order_with_its_sha256(tmp_path):
    _code(tmp_path)
    done = _run(tmp_path, "--out", "out/kind.sha256", "top.py", "pkg", "pkg/b.py")
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "out/kind.sha256").read_text().splitlines()
    names = ["pkg/__init__.py", "pkg/b.py", "pkg/data.json", "pkg/sub/a.py", "top.py"]
    assert lines == [f"{hashlib.sha256((tmp_path / n).read_bytes()).hexdigest()}  {n}" for n in names]
    assert not (tmp_path / "out/kind.sha256.partial").exists()
    check = subprocess.run(["sha256sum", "-c", "out/kind.sha256"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr  # the format sha256sum checks


def test_changes_with_a_file_s_content_and_not_with_bytecode_or_argument_order(tmp_path):
    _code(tmp_path)
    assert _run(tmp_path, "--out", "first", "top.py", "pkg").returncode == 0
    (tmp_path / "pkg/__pycache__").mkdir()
    (tmp_path / "pkg/__pycache__/b.cpython-311.pyc").write_bytes(b"\0bytecode")
    (tmp_path / "pkg/sub/a.pyc").write_bytes(b"\0bytecode")
    assert _run(tmp_path, "--out", "second", "pkg", "top.py").returncode == 0
    assert (tmp_path / "first").read_text() == (tmp_path / "second").read_text()
    (tmp_path / "pkg/sub/a.py").write_text("A = 2\n")
    assert _run(tmp_path, "--out", "third", "top.py", "pkg").returncode == 0
    changed = set((tmp_path / "third").read_text().splitlines()) ^ set((tmp_path / "first").read_text().splitlines())
    assert {line.split()[1] for line in changed} == {"pkg/sub/a.py"}


def test_a_missing_path_is_an_error_line_and_exit_2(tmp_path):
    _code(tmp_path)
    done = _run(tmp_path, "--out", "out.sha256", "top.py", "gone.py")
    assert done.returncode == 2 and "error: gone.py: no such file or folder" in done.stderr
    assert not (tmp_path / "out.sha256").exists()
