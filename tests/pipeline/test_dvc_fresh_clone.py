"""The DVC commands docs/pipeline.md gives a user of a fresh clone after `make repro` (section "DVC on a
fresh clone") are quiet and useful: bare `dvc status` ≤ 40 lines, bare `dvc exp run` without a
warning and rerunning nothing for a run-time knob, `dvc exp show` ≤ 60 columns with each arm's S and
the changed param, `dvc dag` of one arm ≤ 40 lines and ≤ 210 columns. The built state is made up:
every demo output is written by hand and recorded with `dvc commit -f` (the real build takes
minutes). The bare commands are quiet because every study but the demo is a DVC project of its
own (``negotiation.pipeline._project``); `exp show` still needs its filters (a canary says when a
DVC release lets a project set its default columns)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
from tests.pipeline.dvc_checkout import ROOT, checkout_copy, dvc, stage_env

pytestmark = pytest.mark.slow

# Writes a stand-in for every output (and every upstream file under outputs/) of the demo's stages.
_MAKE_UP = """
from pathlib import Path
from dvc.repo import Repo
stages = Repo('.').stage.collect('dvc.yaml', with_deps=True)
for stage in stages:
    for out in stage.outs:
        path = Path(out.fs_path)
        if path.exists():
            continue
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{}\\n')
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / 'made-up.txt').write_text('x\\n')
for stage in stages:
    for dep in stage.deps:
        path = Path(dep.fs_path)
        if 'outputs' in path.parts and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{}\\n')
"""


def documented_commands() -> dict[str, list[str]]:
    """The `dvc status`, `dvc exp run`, `dvc dag` and `dvc exp show` lines of the docs' fresh-clone block."""
    text = (ROOT / "docs/pipeline.md").read_text(encoding="utf-8")
    section = text.split("## DVC on a fresh clone", 1)[1].split("\n## ", 1)[0]
    commands = {}
    for line in section.splitlines():
        if line.startswith("    dvc "):
            argv = shlex.split(line, comments=True)
            commands[" ".join(argv[1:3]) if argv[1] == "exp" else argv[1]] = argv
    assert set(commands) == {"status", "exp run", "exp show", "dag"}, commands
    return commands


def _ok(result) -> str:
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result.stdout + result.stderr


def test_documented_dvc_commands_are_quiet_on_a_built_fresh_clone(tmp_path):
    commands = documented_commands()
    copy = checkout_copy(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=copy, check=True)
    subprocess.run([*git, "commit", "-qm", "fresh clone"], cwd=copy, check=True)
    subprocess.run([sys.executable, "-c", _MAKE_UP], cwd=copy, env=stage_env(copy), check=True)
    _ok(dvc(["commit", "-f", "--with-deps", "dvc.yaml"], copy))

    assert commands["status"] == ["dvc", "status"] and "dvc.yaml" not in commands["exp run"]  # bare
    status = _ok(dvc(commands["status"][1:], copy))
    assert len(status.splitlines()) <= 40 and "up to date" in status, status[:3000]

    run = _ok(dvc(commands["exp run"][1:], copy))
    assert "WARNING" not in run and "Running stage" not in run, run[-3000:]  # a knob reruns nothing

    show = _ok(dvc([*commands["exp show"][1:], "--no-pager", "--md"], copy))
    header = [c.strip() for c in show.splitlines()[0].strip("|").split("|")]
    assert len(header) <= 60, header
    knob = re.search(r"-S\s*(\S+)=", " ".join(commands["exp run"])).group(1)
    assert knob in header and "metrics/demo/w16_base.json:S" in header, header
    assert not any(c.startswith(("negotiation/", "outputs/", "pipelines/")) for c in header), header

    # canary: DVC makes a column of every param, metric and dep, and reads no default filter
    bare = _ok(dvc(["exp", "show", "--no-pager", "--md"], copy))
    assert len(bare.splitlines()[0].split("|")) > 60



def test_documented_dvc_dag_is_one_arms_readable_graph():
    argv = documented_commands()["dag"]
    arm_file = argv[-1]
    out = _ok(dvc(argv[1:], ROOT))
    lines = out.splitlines()
    # six stages and the code stage of each one's kind: a wide terminal's width (DVC's pager scrolls)
    assert len(lines) <= 40 and max(map(len, lines)) <= 210, out
    for stage in ("scenarios", "init@", f"{arm_file}:train@", f"{arm_file}:select", f"{arm_file}:pilot",
                  f"{arm_file}:evaluate", *(f"code_{kind}" for kind in ("scenarios", "init", "train", "select",
                                                                          "pilot", "evaluate"))):
        assert stage in out, (stage, out)
    assert max(map(len, _ok(dvc(["dag"], ROOT)).splitlines())) > 1000  # canary: bare dag draws every arm
