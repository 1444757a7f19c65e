"""A throwaway copy of this checkout (tracked and untracked, not ignored, files) to run DVC in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from negotiation.study import default_root

ROOT = default_root()


def checkout_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_symlink():  # a study's DVC project links outputs/ and metrics/
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dest / name)
        elif src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def stage_env(cwd: Path, **extra: str) -> dict[str, str]:
    """The environment stage commands run in: this interpreter first on PATH, the copy's package."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}", "PYTHONPATH": str(cwd), **extra}


def dvc(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, env=stage_env(cwd, **extra),
                          capture_output=True, text=True, timeout=600)


def addresses(cwd: Path, study_file: str = "dvc.yaml") -> dict[str, str]:
    """Each stage of a study (its study file and arm files) by name, ``select@<arm>``, ``train@<run>``,
    ``init@<size>``, ``track``: its DVC address relative to ``cwd`` as DVC prints it (``<arm
    file>:select``; a stage of the top-level ``dvc.yaml`` by its bare name)."""
    from negotiation.pipeline import stage_commands

    out = {}
    for command in stage_commands(Path(cwd) / study_file):
        path, _, name = command.address.rpartition(":")
        rel = Path(path).relative_to(cwd).as_posix()
        out[command.name] = name if rel == "dvc.yaml" else f"{rel}:{name}"  # as DVC names it
    return out


def stage_body(cwd: Path, address: str) -> dict:
    """The body of the stage at a DVC address (``file:stage``, ``file:group@key``, or a bare name in
    the top-level ``dvc.yaml``): its foreach group's ``do`` for a group item."""
    import yaml

    path, _, name = address.rpartition(":")
    stages = yaml.safe_load((Path(cwd) / (path or "dvc.yaml")).read_text(encoding="utf-8"))["stages"]
    stage = stages[name.split("@")[0]]
    return stage["do"] if "foreach" in stage else stage
