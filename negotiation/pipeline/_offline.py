"""A pipeline file's stage commands without DVC: the GPU profile's round trip.

A GPU machine has torch and transformers but neither DVC nor MLflow. ``run_offline`` reads a
study file the plan generated and its arm files (``plan.arms_dir`` of its ``vars``:
``arms/<arm>/dvc.yaml``), fills their ``${...}`` variables as DVC does, and runs the chosen
stages' commands, exactly as written, group by group (``STAGE_ORDER``: each group after the ones it
reads; a run's parent before it). A stage is named as before the per-arm layout, ``init@<size>``,
``train@<run>``, ``select@<arm>`` (patterns match these), and addressed as DVC does
(``<arm file>:select``). Each finished stage is entered in ``<plan.out>/stages-run.json``; a later
call skips those, so a call cut short (a 10-minute device limit) is followed by the same call.
Nothing here deletes an output: a partial run resumes from its ``resume.pt``, a pilot or
evaluation resumes from its store. A stage's small outputs outside ``<plan.out>`` (its metrics file,
``metrics/<study>-gpu/<arm>.json``) are also kept in its ledger entry and written back by a later
call where they are missing: a machine that receives a fresh copy of the working tree each call
would otherwise lose the files that folder holds, which git does not ignore.

Brought home, ``commit_offline`` runs ``dvc commit -f`` on exactly the stages the ledger lists, so
``dvc status`` of the file is clean for them and ``dvc repro`` runs only the stages left (the
home stages: track, validate, analyze, report, audit). This module imports yaml and the standard
library only.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from negotiation.pipeline._studyfile import STAGE_ORDER  # the order stage groups run in (each after those it reads)

LEDGER = "stages-run.json"
KEPT_BYTES = 65_536
"""Largest output outside ``<plan.out>`` the ledger keeps a copy of (a metrics file is ~1 KB)."""
_VAR = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class StageCommand:
    """One stage of a study's DVC files, its variables filled: its name (``select@<arm>``), group,
    command, DVC address (``<file>:<stage>``, the file as the study file was given), the folder
    it runs in (its ``wdir``, relative to where the file was given from: a study's own DVC project
    runs its commands inside it, each starting with a ``cd`` to the root) and the arm whose file
    holds it (``None``: the study file)."""

    name: str
    group: str
    cmd: str
    address: str
    wdir: str = "."
    arm: str | None = None
    outs: tuple[str, ...] = ()
    """The stage's outputs as written in its file, variables filled (relative to ``wdir``)."""


def _outs(body: dict[str, Any], ctx: dict[str, Any]) -> tuple[str, ...]:
    return tuple(_fill(next(iter(o)) if isinstance(o, dict) else o, ctx) for o in body.get("outs", []))


def _lookup(ctx: dict[str, Any], dotted: str) -> Any:
    node: Any = ctx
    for part in dotted.strip().split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"${{{dotted}}}: not in the pipeline file's vars")
        node = node[part]
    return node


def _fill(text: str, ctx: dict[str, Any]) -> str:
    return _VAR.sub(lambda m: str(_lookup(ctx, m.group(1))), " ".join(str(text).split()))




def _context(pipeline_file: Path) -> dict[str, Any]:
    graph = yaml.safe_load(pipeline_file.read_text(encoding="utf-8"))
    beside = pipeline_file.parent / "params.yaml"  # DVC reads the file's own params.yaml first
    ctx: dict[str, Any] = (yaml.safe_load(beside.read_text(encoding="utf-8")) or {}) if beside.is_file() else {}
    for entry in graph.get("vars", []):
        ctx.update(entry if isinstance(entry, dict)
                   else yaml.safe_load((pipeline_file.parent / entry).read_text(encoding="utf-8")) or {})
    return {"graph": graph, "vars": ctx}


def _file_commands(path: Path, arm: str | None) -> list[tuple[StageCommand, int]]:
    """The file's stages, each with 1 when it is a run continuing another run (its ``start``), else 0."""
    loaded = _context(path)
    ctx, out = loaded["vars"], []
    for name, stage in loaded["graph"]["stages"].items():
        body = stage["do"] if "foreach" in stage else stage
        wdir = os.path.normpath(path.parent / body.get("wdir", "."))
        if "foreach" not in stage:
            out.append((StageCommand(f"{name}@{arm}" if arm else name, name, _fill(stage["cmd"], ctx),
                                     f"{path.as_posix()}:{name}", wdir, arm, _outs(stage, ctx)), 0))
            continue
        items = stage["foreach"] if isinstance(stage["foreach"], dict) else \
            _lookup(ctx, _VAR.fullmatch(stage["foreach"]).group(1))
        for key, item in items.items():
            continues = int(name == "train" and "/train/" in str((item or {}).get("start", "")))
            filled = {**ctx, "key": key, "item": item}
            out.append((StageCommand(f"{name}@{key}", name, _fill(stage["do"]["cmd"], filled),
                                     f"{path.as_posix()}:{name}@{key}", wdir, arm, _outs(stage["do"], filled)),
                        continues))
    return out


def arm_files(pipeline_file: str | Path) -> list[Path]:
    """The arm files of a study file (``plan.arms_dir`` of its vars, relative to it), by arm name."""
    pipeline_file = Path(pipeline_file)
    arms = _context(pipeline_file)["vars"].get("plan", {}).get("arms_dir")
    folder = pipeline_file.parent / arms if arms else None
    return sorted(folder.glob("*/dvc.yaml")) if folder and folder.is_dir() else []


def stage_commands(pipeline_file: str | Path) -> list[StageCommand]:
    """Every stage of the study file ``pipeline_file`` and its arm files (foreach groups expanded),
    group by group in ``STAGE_ORDER``; runs that start from another run's output after it."""
    pipeline_file = Path(pipeline_file)
    commands = _file_commands(pipeline_file, None)
    for path in arm_files(pipeline_file):
        commands += _file_commands(path, path.parent.name)
    rank = {group: i for i, group in enumerate(STAGE_ORDER)}
    return [c for c, _ in sorted(commands, key=lambda cc: (rank.get(cc[0].group, len(rank)), cc[1]))]


def ledger_path(pipeline_file: str | Path, root: Path) -> Path:
    """``<plan.out>/stages-run.json`` of the pipeline file's plan."""
    return Path(root) / _lookup(_context(Path(pipeline_file))["vars"], "plan.out") / LEDGER


def _read_ledger(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _chosen(commands: list[StageCommand], groups: tuple[str, ...], patterns: tuple[str, ...]) -> list[StageCommand]:
    return [c for c in commands if c.group in groups
            and (not patterns or any(fnmatch.fnmatchcase(c.name, p) for p in patterns))]


def run_offline(pipeline_file: str | Path, root: Path, *, groups: tuple[str, ...], patterns: tuple[str, ...] = (),
                dry: bool = False) -> list[str]:
    """Run the stages of ``groups`` (those matching ``patterns`` if any) not yet in the ledger;
    return the names run (or, ``dry``, those that would run). A failing command stops the call
    with its exit status, naming the stage."""
    pipeline_file, root = Path(pipeline_file), Path(root)
    ledger_file = ledger_path(pipeline_file, root)
    if not dry:
        _restore_kept(ledger_file, root)
    ran = []
    for command in _chosen(stage_commands(pipeline_file), groups, patterns):
        if command.name in _read_ledger(ledger_file):  # read each time: another lane may have run it
            continue
        print(f"[{command.name}] {command.cmd}", file=sys.stderr, flush=True)
        ran.append(command.name)
        if dry:
            continue
        start = time.perf_counter()
        done = subprocess.run(command.cmd, shell=True, cwd=root / command.wdir)
        if done.returncode != 0:
            raise SystemExit(f"error: stage {command.name} failed (exit {done.returncode}): {command.cmd}")
        _record(ledger_file, command.name, {"cmd": command.cmd, "seconds": round(time.perf_counter() - start, 1),
                                            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                            **_kept(command, root, ledger_file.parent)})
    return ran


def _kept(command: StageCommand, root: Path, profile_out: Path) -> dict[str, Any]:
    """``{"kept": {path: text}}`` of the stage's small file outputs outside ``profile_out`` (paths
    relative to ``root``), or nothing."""
    kept = {}
    for out in command.outs:
        path = (root / command.wdir / out).resolve()
        if profile_out.resolve() in path.parents or not path.is_file() or path.stat().st_size > KEPT_BYTES:
            continue
        try:
            kept[os.path.relpath(path, root.resolve())] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # the ledger is JSON text: a binary output stays where it is, uncopied
            continue
    return {"kept": kept} if kept else {}


def _restore_kept(ledger_file: Path, root: Path) -> None:
    """Write back each finished stage's kept output that is missing here, saying so."""
    for name, entry in sorted(_read_ledger(ledger_file).items()):
        for rel, text in entry.get("kept", {}).items():
            path = root / rel
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                print(f"[{name}] restored {rel} from {ledger_file.name} (missing in this copy of the checkout)",
                      file=sys.stderr, flush=True)


def _record(ledger_file: Path, name: str, entry: dict[str, Any]) -> None:
    """Enter one finished stage in the ledger: re-read under an exclusive lock, add, replace
    atomically. Two calls at once on disjoint stages (a training lane beside an evaluation lane on
    one GPU) then keep each other's entries instead of the last writer's view winning."""
    ledger_file.parent.mkdir(parents=True, exist_ok=True)
    with open(ledger_file.with_suffix(".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ledger = _read_ledger(ledger_file)
        ledger[name] = entry
        tmp = ledger_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(ledger_file)


def dvc_project(pipeline_file: str | Path, root: Path) -> Path:
    """The DVC project holding ``pipeline_file`` (the nearest folder up from it with a ``.dvc``;
    relative to ``root``): a study's own project, else the root's."""
    folder = Path(os.path.normpath(Path(pipeline_file).parent))
    while folder != folder.parent and not (Path(root) / folder / ".dvc").is_dir():
        folder = folder.parent
    return folder


def commit_command(pipeline_file: str | Path, root: Path) -> list[str]:
    """``dvc commit -f`` of every stage the ledger lists (in the file's order), as an argv run in
    the file's DVC project (``dvc --cd <project>`` for a study's own)."""
    pipeline_file = Path(pipeline_file)
    ledger = _read_ledger(ledger_path(pipeline_file, root))
    project = dvc_project(pipeline_file, root)
    names = [Path(os.path.relpath(c.address, project)).as_posix() for c in stage_commands(pipeline_file)
             if c.name in ledger]
    if not names:
        raise SystemExit(f"error: {ledger_path(pipeline_file, root)}: no finished stage to commit "
                         "(bring the GPU machine's outputs home first)")
    return ["dvc", *(["--cd", project.as_posix()] if project.parts else []), "commit", "-f", *names]


def commit_offline(pipeline_file: str | Path, root: Path) -> int:
    """Record the returned outputs of the ledger's stages in DVC's lock (``dvc commit -f``)."""
    argv = commit_command(pipeline_file, root)
    print(shlex.join(argv), file=sys.stderr, flush=True)
    return subprocess.run(argv, cwd=root).returncode


__all__ = ["LEDGER", "STAGE_ORDER", "StageCommand", "arm_files", "commit_command", "commit_offline", "dvc_project", "ledger_path", "run_offline",
           "stage_commands"]
