"""The stage graph a study's profile runs: ``pipelines/stages.yaml`` with what the study adds (a
language-model ladder's tokenizer stage, a policy warm start's reads), without what it lacks (a
buyer panel), the GPU profile's persistence and descriptions, and every stage's derived code deps
(``_codedeps``). ``_studyfile`` fills it with the study's plan and writes the DVC files.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from negotiation.pipeline._codedeps import fingerprint_code_deps, set_code_deps
from negotiation.pipeline._layout import DEFAULT_STUDY, pipeline_dir, project_dir
from negotiation.pipeline._project import repro_command

if TYPE_CHECKING:
    from negotiation.protocol import Protocol
    from negotiation.study import Study

TOP_LEVEL = "dvc.yaml"
TEMPLATE = "pipelines/stages.yaml"
DEVICE_STAGES = ("scenarios", "tokenizer", "init", "train", "select", "pilot", "evaluate")
"""The GPU profile's stages run on the GPU machine (``python scripts/gpu_profile.py run``); the
others (track, validate, analyze, report, audit) need MLflow, great-expectations or the report's
plotting and run here with ``dvc repro`` once the device stages' outputs are committed."""
PERSIST = ("init", "train")
"""GPU-profile stages whose outputs cost GPU hours: ``persist: true`` (a rerun never deletes them,
and the stage refuses to overwrite a finished one); pilot and evaluate persist in every profile."""
_DEVICE_DESC = "GPU machine: scripts/gpu_profile.py run; here: gpu_profile.py commit (docs/pipeline.md)"
_HOME_DESC = "here, after gpu_profile.py commit: {command} (docs/pipeline.md)"


def study_pipeline_path(study: str, root: Path, profile: str = "cpu") -> Path:
    if profile == "gpu":
        return Path(root) / pipeline_dir(study, profile) / TOP_LEVEL
    return Path(root) / (TOP_LEVEL if study == DEFAULT_STUDY else pipeline_dir(study) / TOP_LEVEL)


def _replaced(node: Any, old: str, new: str) -> Any:
    """``node`` (a YAML tree) with ``old`` replaced by ``new`` in every key and string."""
    if isinstance(node, dict):
        return {_replaced(k, old, new): _replaced(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replaced(v, old, new) for v in node]
    return node.replace(old, new) if isinstance(node, str) else node


def _gpu_profile(graph: dict[str, Any], study: str, protocol: Protocol) -> dict[str, Any]:
    """The study graph as the GPU profile's: its own metrics folder, every command reading the GPU
    profile's evaluation design (``--profile gpu``) and listing its keys as params, the costly
    outputs persisted, and each stage's ``desc`` saying where it runs."""
    graph = _replaced(graph, "metrics/${plan.study}/", "metrics/${plan.study}-gpu/")
    graph = _replaced(graph, "--study ${plan.study}", "--study ${plan.study} --profile gpu")
    for name, stage in graph["stages"].items():
        body = stage["do"] if "foreach" in stage else stage
        for params in body.get("params", []):
            for file, keys in (params.items() if isinstance(params, dict) else ()):
                if file == "protocol/${plan.study}/protocol.yaml":
                    params[file] = [protocol.key_for("gpu", key) for key in keys]
        if name in PERSIST:
            body["outs"] = [{out: {"persist": True}} if i == 0 else out for i, out in enumerate(body["outs"])]
        home = repro_command(study, study_pipeline_path(study, Path(), "gpu"))
        body["desc"] = _DEVICE_DESC if name in DEVICE_STAGES else _HOME_DESC.format(command=home)
    return graph


# What a study with a language-model ladder (protocol ``tokenizer`` section) adds to the graph:
# a ``tokenizer`` stage before ``init``, and ``init@<size>`` warm-starting each base from it.
# The protocol keys a scripted warm-start corpus reads (negotiation.agents.scripted_seller_turns).
_CORPUS_READS = ["seeds.training", "domains.training", "buyers.training", "environment"]
_LADDER_READS = ["tokenizer", "warm_start", *_CORPUS_READS,
                 "sampling.self_served_seller"]
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


# What a policy warm start (protocol ``policy_warm_start``) makes ``init@<size>`` read: its corpus
# is scripted sellers against the training buyers on the training domains and seeds.
_POLICY_WARM_START_READS = ["policy_warm_start", *_CORPUS_READS]


def _add_policy_warm_start(graph: dict[str, Any]) -> None:
    body = graph["stages"]["init"]["do"]
    body["deps"] += ["protocol/domains"]
    body["params"][0]["protocol/${plan.study}/protocol.yaml"] += _POLICY_WARM_START_READS


_PANEL_OUT = "${plan.out}/panel"


def _drop_panel(graph: dict[str, Any]) -> None:
    """Remove the ``panel`` stage and every dep on its output (a study without a buyer panel)."""
    graph["stages"].pop("panel", None)
    for stage in graph["stages"].values():
        body = stage["do"] if "foreach" in stage else stage
        body["deps"] = [dep for dep in body.get("deps", []) if dep != _PANEL_OUT]


def _undeclare_metrics(stage: dict[str, Any]) -> None:
    body = stage["do"] if "foreach" in stage else stage
    body.setdefault("outs", []).extend(body.pop("metrics", []))


def template_graph(study: str | Study, root: Path, profile: str = "cpu") -> tuple[dict[str, Any], dict[str, Any]]:
    """``pipelines/stages.yaml`` as the study's profile runs it, and its code stages (kind -> body;
    none for the GPU profile: its device stages run without DVC, so each lists its code deps): the
    ladder's tokenizer stage where the protocol has one, the GPU profile's persistence and descriptions; only
    the default study declares metrics and plots (DVC collects those of every ``dvc.yaml``, so
    another study's, absent until it runs, would make ``dvc metrics show`` report "failed to load";
    they stay outputs: show them with an explicit path, docs/pipeline.md). A loaded ``Study`` is
    not read again."""
    from negotiation.study import as_study

    loaded = as_study(study, root)
    study = loaded.name
    graph = yaml.safe_load((Path(root) / TEMPLATE).read_text(encoding="utf-8"))
    if loaded.protocol.tokenizer is not None:
        _add_ladder(graph)
    if loaded.protocol.policy_warm_start is not None:
        _add_policy_warm_start(graph)
    if loaded.panel is None or profile == "gpu":
        _drop_panel(graph)
    # A dep outside a study's own DVC project is hashed without its .dvcignore: files, not folders.
    folders = not project_dir(study).parts
    code_stages = {}
    if profile == "gpu":
        set_code_deps(graph, root, folders=folders)
        graph = _gpu_profile(graph, study, loaded.protocol)
    else:
        code_stages = fingerprint_code_deps(graph, root, folders=folders)
    if study != DEFAULT_STUDY or profile == "gpu":
        for stage in graph["stages"].values():
            _undeclare_metrics(stage)
        graph.pop("plots", None)
    return graph, code_stages
