"""Per-study DVC files: the top-level ``dvc.yaml`` is the default study's stage graph; every other
study gets ``pipelines/<study>/dvc.yaml``, derived from it so the graph is written once.

DVC cannot switch a ``vars`` file by parameter (``../shared/notes/dvc.md``), so a study needs its
own pipeline file; this derives it (other vars file, ``wdir`` at the repository root; a study with
a language-model ladder also gets its ``tokenizer`` stage) and the plan check verifies it is current.

Every study's stages, the top-level file's included, get their code deps derived from their
script's import closure (``_deps``); only those deps are rewritten in the top-level file.
"""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path
from typing import Any

import yaml

from negotiation.pipeline._deps import PACKAGE, ImportClosure, compress

DEFAULT_STUDY = "demo"
TOP_LEVEL = "dvc.yaml"
HEADER = ("# GENERATED from the top-level dvc.yaml by `nego pipeline plan {study}`: the same stage graph\n"
          "# over pipelines/plans/{study}.yaml. Run it with `dvc repro pipelines/{study}/dvc.yaml` (add\n"
          "# --dry for the plan). Do not edit; CI checks it with `nego pipeline plan {study} --check`.\n")


GPU_HEADER = ("# GENERATED from the top-level dvc.yaml by `nego pipeline plan {study}`: the {study} study's GPU\n"
              "# profile (pipelines/plans/{study}-gpu.yaml, results in outputs/{study}-gpu). `dvc repro` never runs\n"
              "# it unless named: its device stages run on a GPU machine without DVC and come home to be\n"
              "# committed (docs/pipeline.md, \"GPU stages\"). Do not edit; CI checks it with `nego pipeline plan {study} --check`.\n")
DEVICE_STAGES = ("scenarios", "tokenizer", "init", "train", "select", "pilot", "evaluate")
"""The GPU profile's stages run on the GPU machine (``python scripts/gpu_profile.py run``); the
others (track, validate, analyze, report, audit) need MLflow, great-expectations or the report's
plotting and run here with ``dvc repro`` once the device stages' outputs are committed."""
PERSIST = ("init", "train")
"""GPU-profile stages whose outputs cost GPU hours: ``persist: true`` (a rerun never deletes them,
and the stage refuses to overwrite a finished one); pilot and evaluate persist in every profile."""
_DEVICE_DESC = "GPU machine: scripts/gpu_profile.py run; here: gpu_profile.py commit (docs/pipeline.md)"
_HOME_DESC = "here, after gpu_profile.py commit: dvc repro pipelines/{study}/gpu/dvc.yaml (docs/pipeline.md)"


def study_pipeline_path(study: str, root: Path, profile: str = "cpu") -> Path:
    if profile == "gpu":
        return Path(root) / f"pipelines/{study}/gpu/{TOP_LEVEL}"
    return Path(root) / (TOP_LEVEL if study == DEFAULT_STUDY else f"pipelines/{study}/{TOP_LEVEL}")


def _rebase_stage(stage: dict[str, Any], wdir: str = "../..") -> None:
    body = stage["do"] if "foreach" in stage else stage
    body["wdir"] = wdir


def _replaced(node: Any, old: str, new: str) -> Any:
    """``node`` (a YAML tree) with ``old`` replaced by ``new`` in every key and string."""
    if isinstance(node, dict):
        return {_replaced(k, old, new): _replaced(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replaced(v, old, new) for v in node]
    return node.replace(old, new) if isinstance(node, str) else node


def _gpu_profile(graph: dict[str, Any], study: str) -> dict[str, Any]:
    """The study graph as the GPU profile's: its own metrics folder and plan file, the costly
    outputs persisted, and each stage's ``desc`` saying where it runs."""
    graph = _replaced(graph, "metrics/${plan.study}/", "metrics/${plan.study}-gpu/")
    graph = _replaced(graph, "pipelines/plans/${plan.study}.yaml", "pipelines/plans/${plan.study}-gpu.yaml")
    for name, stage in graph["stages"].items():
        body = stage["do"] if "foreach" in stage else stage
        if name in PERSIST:
            body["outs"] = [{out: {"persist": True}} if i == 0 else out for i, out in enumerate(body["outs"])]
        desc = (_DEVICE_DESC if name in DEVICE_STAGES else _HOME_DESC).format(study=study)
        stage.update({"desc": desc}) if "foreach" not in stage else body.update({"desc": desc})
    return graph


# What a study with a language-model ladder (protocol ``tokenizer`` section) adds to the graph:
# a ``tokenizer`` stage before ``init``, and ``init@<size>`` warm-starting each base from it.
_LADDER_READS = ["tokenizer", "warm_start", "seeds.training", "domains.training", "buyers.training",
                 "environment", "sampling.self_served_seller"]
_TOKENIZER_STAGE = {
    "cmd": "python pipelines/tokenizer.py --study ${plan.study} --out ${plan.out}/tokenizer",
    "deps": ["protocol/domains"],  # code deps: derived (set_code_deps)
    "params": [{"protocol/${plan.study}/protocol.yaml": ["tokenizer", "warm_start.corpus"] + _LADDER_READS[2:]}],
    "outs": ["${plan.out}/tokenizer"],
}


def _add_ladder(graph: dict[str, Any]) -> None:
    """Insert the tokenizer stage before ``init`` and make ``init`` read it and the recipe."""
    stages: dict[str, Any] = {}
    for name, stage in graph["stages"].items():
        if name == "init":
            stages["tokenizer"] = copy.deepcopy(_TOKENIZER_STAGE)
            body = stage["do"]
            body["deps"] += ["protocol/domains", "${plan.out}/tokenizer"]
            body["params"][0]["protocol/${plan.study}/protocol.yaml"] += _LADDER_READS
        stages[name] = stage
    graph["stages"] = stages


def _undeclare_metrics(stage: dict[str, Any]) -> None:
    body = stage["do"] if "foreach" in stage else stage
    body.setdefault("outs", []).extend(body.pop("metrics", []))


def derive_study_pipeline(study: str, root: Path, profile: str = "cpu") -> str:
    """The text of ``pipelines/<study>/dvc.yaml`` (``profile`` gpu: ``pipelines/<study>/gpu/dvc.yaml``)
    derived from the top-level one."""
    from negotiation.study import load_study

    gpu = profile == "gpu"
    graph = yaml.safe_load((Path(root) / TOP_LEVEL).read_text(encoding="utf-8"))
    graph = copy.deepcopy(graph)
    up = "../../.." if gpu else "../.."
    graph["vars"] = [f"../../plans/{study}-gpu.yaml" if gpu else f"../plans/{study}.yaml", f"{up}/params.yaml"]
    if load_study(study, root).protocol.tokenizer is not None:
        _add_ladder(graph)
    set_code_deps(graph, root)
    if gpu:
        graph = _gpu_profile(graph, study)
    for stage in graph["stages"].values():
        _rebase_stage(stage, up)
        _undeclare_metrics(stage)
    # DVC collects the metrics and plots of every dvc.yaml in the repository; declaring this study's
    # (absent until it runs) would make `dvc metrics show` / `dvc plots show` of the demo
    # report "failed to load". They stay outputs; show them with an explicit path (docs/pipeline.md).
    graph.pop("plots", None)
    body = yaml.safe_dump(graph, sort_keys=False, default_flow_style=False, width=110)
    return (GPU_HEADER if gpu else HEADER).format(study=study) + body


# --- code deps: derived from each stage's entry script (negotiation.pipeline._deps) -------------
_ENTRY = re.compile(r"\bpipelines/\w+\.py\b")


def is_code_dep(dep: Any) -> bool:
    """A dep that is repository code (derived, never typed by hand): the package or a stage script."""
    return isinstance(dep, str) and (dep == PACKAGE or dep.startswith(f"{PACKAGE}/") or bool(_ENTRY.fullmatch(dep)))


def _bodies(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: (stage["do"] if "foreach" in stage else stage) for name, stage in graph["stages"].items()}


def stage_code_deps(graph: dict[str, Any], root: Path) -> dict[str, list[str]]:
    """Each stage's code deps: the import closure of the script its ``cmd`` runs, as
    repository-relative files and whole-package folders (``_deps.compress``)."""
    closure, derived = ImportClosure(root), {}
    for name, body in _bodies(graph).items():
        entry = _ENTRY.search(" ".join(str(body["cmd"]).split()))
        if entry is None:
            raise ValueError(f"stage {name!r}: cmd {body['cmd']!r} runs no pipelines/<stage>.py script")
        files = closure.files(Path(root) / entry.group(0))
        derived[name] = [entry.group(0)] + [d for d in compress(files, root) if d != entry.group(0)]
    return derived


def set_code_deps(graph: dict[str, Any], root: Path) -> None:
    """Replace every stage's code deps in ``graph`` (in place) by the derived ones, first; the
    other deps (protocol, registry, upstream outputs) keep their order after them."""
    for name, code in stage_code_deps(graph, root).items():
        deps = _bodies(graph)[name].setdefault("deps", [])
        kept = [d for d in deps if not is_code_dep(d)]
        del deps[:]
        deps.extend(code + kept)


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


def render_top_level(root: Path) -> str:
    """The top-level ``dvc.yaml`` with derived code deps; everything else (comments, order,
    params, outs) exactly as written (round-trip YAML)."""
    from ruamel.yaml import YAML

    rt = YAML()
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.width, rt.preserve_quotes = 4096, True
    graph = rt.load((Path(root) / TOP_LEVEL).read_text(encoding="utf-8"))
    set_code_deps(graph, root)
    graph["plots"] = curve_plots(root)
    out = io.StringIO()
    rt.dump(graph, out)
    return out.getvalue()


# --- plots: one per training quantity, every run's curve on it (issue 31) ------------------------
CURVE_QUANTITIES = {"train/reward": "reward", "train/kl_penalty": "KL penalty", "train/entropy": "entropy"}
"""The columns of ``curves/<run>.csv`` that ``dvc plots show`` draws, each on its own plot (own y
scale: reward, KL and entropy differ by orders of magnitude); DVC tells runs apart by line style."""


def curve_plots(root: Path) -> list[dict[str, Any]]:
    """The top-level ``plots:`` section: one plot per quantity, with one ``y`` entry per training
    run of the default study's plan (DVC's ``y`` takes files, not a folder)."""
    plan = yaml.safe_load((Path(root) / f"pipelines/plans/{DEFAULT_STUDY}.yaml").read_text(encoding="utf-8"))
    runs = sorted(plan["plan"]["runs"])
    return [{f"curves_{column.split('/')[-1]}": {
        "title": f"{label} per training step ({column}, one line per run)", "template": "linear",
        "x": "step", "x_label": "step", "y_label": label,
        "y": {f"${{plan.out}}/curves/{run}.csv": column for run in runs}}}
        for column, label in CURVE_QUANTITIES.items()]
