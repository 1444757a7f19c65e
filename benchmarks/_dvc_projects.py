"""The synthetic DVC projects of ``benchmarks/dvc_scale.py`` (not a benchmark: tests/benchmarks' guard
skips ``_`` files): the plan's shape, its three layouts, and finishing a stopped run without DVC."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path

import yaml


ARM_KINDS = ("train", "select", "pilot", "evaluate")
LAYOUTS = ("today", "perarm", "perarm_params")
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "DVC_IGNORE_UPDATES": "1", "GIT_AUTHOR_NAME": "bench",
       "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def arms_for(stages: int) -> list[str]:
    """Arm names for a plan of about ``stages`` stages (four per arm plus four study-level)."""
    return [f"a{i:04d}" for i in range(max(1, (stages - 4) // len(ARM_KINDS)))]


def out_path(kind: str, arm: str | None = None) -> str:
    return f"outputs/{kind}/{arm}.txt" if arm else f"outputs/{kind}.txt"


def stage(kind: str, code: list[str], reads: list[str], out: str, params: list) -> dict:
    """One stage: its code deps and inputs in ``deps``, one output file, trivial shell work."""
    source = " ".join(reads) if reads else "/dev/null"
    cmd = f"mkdir -p {os.path.dirname(out)} && cat {source} | wc -c > {out} && echo {kind} >> {out}"
    return {"cmd": cmd, "deps": [*code, *reads], "params": params, "outs": [out]}


def arm_params(arm: str) -> str:
    """The ``perarm_params`` layout's params file of one arm (the others read ``arms.<arm>`` from the
    study's ``params.yaml``, which DVC parses whole for every stage that reads it)."""
    return f"arms/{arm}/params.yaml"


def arm_stage(kind: str, arm: str, code: list[str], split: bool = False) -> dict:
    upstream = ARM_KINDS[ARM_KINDS.index(kind) - 1] if kind != "train" else None
    reads = [out_path(upstream, arm)] if upstream else [out_path("scenarios")]
    own = {arm_params(arm): ["lr"]} if split else f"arms.{arm}"
    params = ["training", own] if kind in ("train", "select") else ["evaluation"]
    return stage(kind, code, reads, out_path(kind, arm), params)


def study_stages(arms: list[str], code: list[str]) -> dict[str, dict]:
    evaluated = [out_path("evaluate", arm) for arm in arms]
    return {"scenarios": stage("scenarios", code, [], out_path("scenarios"), ["evaluation"]),
            "analyze": stage("analyze", code, evaluated, out_path("analyze"), ["evaluation"]),
            "report": stage("report", code, [out_path("analyze")], out_path("report"), ["evaluation"]),
            "audit": stage("audit", code, [out_path("report")], out_path("audit"), ["evaluation"])}


def today_layout(arms: list[str], code: list[str]) -> dict[str, dict]:
    """``{path: dvc.yaml}``: one file, the arm stages as ``foreach`` over the arm names."""
    stages = study_stages(arms, code)
    for kind in ARM_KINDS:
        templated = yaml.safe_dump(arm_stage(kind, "ARM", code)).replace("ARM", "${item}")
        stages[kind] = {"foreach": arms, "do": yaml.safe_load(templated)}
    return {"dvc.yaml": {"stages": stages}}


def perarm_layout(arms: list[str], code: list[str], split: bool = False) -> dict[str, dict]:
    """``{path: dvc.yaml or params}``: the study-level stages at the root, one file per arm folder
    (with ``split``, the arm's params beside it)."""
    files = {"dvc.yaml": {"stages": study_stages(arms, code)}}
    for arm in arms:
        stages = {kind: {**arm_stage(kind, arm, code, split), "wdir": "../.."} for kind in ARM_KINDS}
        files[f"arms/{arm}/dvc.yaml"] = {"stages": stages}
        if split:
            files[arm_params(arm)] = {"lr": 1.0}
    return files


def concrete(layout: str, arms: list[str], code: list[str]) -> list[tuple[str, str, dict]]:
    """Every stage as ``(its dvc.yaml, its name in the lock, its definition)``, in a run order."""
    study = study_stages(arms, code)
    stages = [("dvc.yaml", "scenarios", study["scenarios"])]
    for arm in arms:
        for kind in ARM_KINDS:
            stages.append(("dvc.yaml", f"{kind}@{arm}", arm_stage(kind, arm, code)) if layout == "today" else
                          (f"arms/{arm}/dvc.yaml", kind, arm_stage(kind, arm, code, layout == "perarm_params")))
    return stages + [("dvc.yaml", kind, study[kind]) for kind in ("analyze", "report", "audit")]


def build(root: Path, layout: str, stages: int, deps: int) -> list[tuple[str, str, dict]]:
    """A git + DVC project at ``root`` in ``layout``; its stages (``concrete``)."""
    arms = arms_for(stages)
    code = [f"code/m{i:02d}.py" for i in range(deps)]
    for path in code:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {path}\nVALUE = {len(path)}\n", encoding="utf-8")
    params = {"training": {"steps": 1}, "evaluation": {"seeds": 2}}
    if layout != "perarm_params":
        params["arms"] = {arm: {"lr": 1.0} for arm in arms}
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    files = today_layout(arms, code) if layout == "today" else perarm_layout(arms, code, layout == "perarm_params")
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    for command in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                    ["git", "commit", "-q", "-m", "synthetic plan"]):
        subprocess.run(command, cwd=root, env=ENV, check=True, capture_output=True)
    return concrete(layout, arms, code)


def _hashed(root: Path, path: str, cache: bool = False) -> dict:
    data = (root / path).read_bytes()
    md5 = hashlib.md5(data).hexdigest()
    if cache:
        stored = root / ".dvc/cache/files/md5" / md5[:2] / md5[2:]
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_bytes(data)
    return {"path": path, "hash": "md5", "md5": md5, "size": len(data)}


def _param_values(root: Path, params: list) -> dict[str, dict]:
    """A stage's ``params`` as its lock entry holds them: ``{file: {key: value}}``."""
    values: dict[str, dict] = {}
    for item in params:
        for file, keys in (item.items() if isinstance(item, dict) else [("params.yaml", [item])]):
            data = yaml.safe_load((root / file).read_text(encoding="utf-8"))
            values.setdefault(file, {}).update(
                {key: functools.reduce(lambda node, part: node[part], key.split("."), data) for key in keys})
    return values


def prefill(root: Path, stages: list[tuple[str, str, dict]]) -> None:
    """Finish a stopped clean run without DVC: run each stage's command and write every lock as
    ``dvc repro`` would (hashes, params, cached outputs), so the no-op and status runs can be timed
    at a size whose clean run takes too long (their checks below verify DVC agrees)."""
    locks: dict[str, dict] = {}
    for dvcfile, name, stage in stages:
        subprocess.run(stage["cmd"], shell=True, cwd=root, check=True)
        entry = {"cmd": stage["cmd"], "deps": [_hashed(root, dep) for dep in stage["deps"]],
                 "params": _param_values(root, stage["params"]),
                 "outs": [_hashed(root, out, cache=True) for out in stage["outs"]]}
        locks.setdefault(dvcfile.replace("dvc.yaml", "dvc.lock"), {"schema": "2.0", "stages": {}})["stages"][name] = entry
    for path, lock in locks.items():
        (root / path).write_text(yaml.safe_dump(lock, sort_keys=False), encoding="utf-8")
