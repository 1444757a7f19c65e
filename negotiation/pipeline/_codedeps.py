"""Each generated stage's code deps: the import closure of the script its ``cmd`` runs
(``negotiation.pipeline._deps``), checked against the committed files (``nego pipeline plan
--check``). A study with its own DVC project lists files, never folders (``_project``).

Every stage of a kind (``train@<run>``, ``select@<arm>``, ...) runs the same script, so listing the
closure on each of them made a no-op ``dvc repro`` check the same ~30 code deps once per stage
(nine in ten of the demo's deps). ``fingerprint_code_deps`` lists them once, on a code stage per
kind in the study file (``code_<kind>``: ``pipelines/fingerprint.py`` writing
``<results>/code/<kind>.sha256``), and each stage of the kind depends on that one file: an edit
reruns the code stages whose closure holds the file, whose new fingerprints rerun exactly those
kinds' stages. ``set_code_deps`` lists them on each stage instead, for a profile whose stages run
without DVC (the GPU profile's device stages)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from negotiation.pipeline._deps import FOLDER_SHARE, PACKAGE, ImportClosure, compress

__all__ = ["FINGERPRINT_SCRIPT", "code_dep_problems", "code_stage", "fingerprint_code_deps", "fingerprint_path",
           "is_code_dep", "set_code_deps", "stage_code_deps"]

_ENTRY = re.compile(r"\bpipelines/\w+\.py\b")
FINGERPRINT_SCRIPT = "pipelines/fingerprint.py"


def is_code_dep(dep: Any) -> bool:
    """A dep that is repository code (derived, never typed by hand): the package or a stage script
    (root-relative, or from a study's own project: ``../../negotiation/...``)."""
    if not isinstance(dep, str):
        return False
    dep = re.sub(r"^(\.\./)+", "", dep)
    return dep == PACKAGE or dep.startswith(f"{PACKAGE}/") or bool(_ENTRY.fullmatch(dep))


def _bodies(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: (stage["do"] if "foreach" in stage else stage) for name, stage in graph["stages"].items()}


def stage_code_deps(graph: dict[str, Any], root: Path, *, folders: bool = True) -> dict[str, list[str]]:
    """Each stage's code deps: the import closure of the script its ``cmd`` runs, as
    repository-relative files and (``folders``) whole-package folders (``_deps.compress``)."""
    closure, derived = ImportClosure(root), {}
    for name, body in _bodies(graph).items():
        entry = _ENTRY.search(" ".join(str(body["cmd"]).split()))
        if entry is None:
            raise ValueError(f"stage {name!r}: cmd {body['cmd']!r} runs no pipelines/<stage>.py script")
        files = closure.files(Path(root) / entry.group(0))
        share = FOLDER_SHARE if folders else float("inf")
        derived[name] = [entry.group(0)] + [d for d in compress(files, root, share=share) if d != entry.group(0)]
    return derived


def _put_first(body: dict[str, Any], code: list[str]) -> None:
    """Replace the body's code deps by ``code``, first; the other deps (protocol, registry,
    upstream outputs) keep their order after them."""
    deps = body.setdefault("deps", [])
    kept = [d for d in deps if not is_code_dep(d)]
    del deps[:]
    deps.extend(code + kept)


def set_code_deps(graph: dict[str, Any], root: Path, *, folders: bool = True) -> None:
    """Replace every stage's code deps in ``graph`` (in place) by the derived ones."""
    for name, code in stage_code_deps(graph, root, folders=folders).items():
        _put_first(_bodies(graph)[name], code)


def fingerprint_path(out: str, kind: str) -> str:
    """The fingerprint file of a stage kind's code, under a study's results folder ``out``."""
    return f"{out}/code/{kind}.sha256"


def code_stage(kind: str) -> str:
    """The name of a stage kind's code stage (short: ``dvc dag`` draws it beside every stage of the kind)."""
    return f"code_{kind}"


def fingerprint_code_deps(graph: dict[str, Any], root: Path, *, folders: bool = True) -> dict[str, Any]:
    """Give every stage of ``graph`` (in place) its kind's fingerprint file as its only code dep,
    first, and return the code stages writing them (``code_stage(kind)`` -> body): each lists the kind's
    derived code deps and hashes them. Paths hold ``${plan.out}``, filled as the stages' are."""
    code_stages = {}
    for name, code in stage_code_deps(graph, root, folders=folders).items():
        out = fingerprint_path("${plan.out}", name)
        code_stages[code_stage(name)] = {"cmd": f"python {FINGERPRINT_SCRIPT} --out {out} {' '.join(code)}",
                             "deps": [FINGERPRINT_SCRIPT, *code], "outs": [out]}
        _put_first(_bodies(graph)[name], [out])
    return code_stages


def code_dep_problems(committed: str, derived: str, where: str) -> list[str]:
    """What differs between two pipeline texts' code deps, per stage: ``where: stage S: missing
    dep X`` (imported, not listed) or ``extra dep X`` (listed, not imported)."""
    old, new = _bodies(yaml.safe_load(committed) or {"stages": {}}), _bodies(yaml.safe_load(derived))
    problems = []
    for name in new:
        have = {d for d in old.get(name, {}).get("deps", []) if is_code_dep(d)}
        need = {d for d in new[name].get("deps", []) if is_code_dep(d)}
        problems += [f"{where}: stage {name}: missing dep {d}" for d in sorted(need - have)]
        problems += [f"{where}: stage {name}: extra dep {d}" for d in sorted(have - need)]
    return problems
