"""Per-study DVC files: the top-level ``dvc.yaml`` is the default study's stage graph; every other
study gets ``pipelines/<study>/dvc.yaml``, derived from it so the graph is written once.

DVC cannot switch a ``vars`` file by parameter (``../shared/notes/dvc.md``), so a study needs its
own pipeline file; this derives it (other vars file, ``wdir`` at the repository root; a study with
a language-model ladder also gets its ``tokenizer`` stage) and the plan check verifies it is current.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

DEFAULT_STUDY = "demo"
TOP_LEVEL = "dvc.yaml"
HEADER = ("# GENERATED from the top-level dvc.yaml by `nego pipeline plan {study}`: the same stage graph\n"
          "# over pipelines/plans/{study}.yaml. Run it with `dvc repro pipelines/{study}/dvc.yaml` (add\n"
          "# --dry for the plan). Do not edit; CI checks it with `nego pipeline plan {study} --check`.\n")


def study_pipeline_path(study: str, root: Path) -> Path:
    return Path(root) / (TOP_LEVEL if study == DEFAULT_STUDY else f"pipelines/{study}/{TOP_LEVEL}")


def _rebase_stage(stage: dict[str, Any]) -> None:
    body = stage["do"] if "foreach" in stage else stage
    body["wdir"] = "../.."


# What a study with a language-model ladder (protocol ``tokenizer`` section) adds to the graph:
# a ``tokenizer`` stage before ``init``, and ``init@<size>`` warm-starting each base from it.
_LADDER_READS = ["tokenizer", "warm_start", "seeds.training", "domains.training", "buyers.training",
                 "environment", "sampling.self_served_seller"]
_TOKENIZER_STAGE = {
    "cmd": "python pipelines/tokenizer.py --study ${plan.study} --out ${plan.out}/tokenizer",
    "deps": ["pipelines/tokenizer.py", "negotiation/pipeline/_stage.py", "negotiation/pipeline/_train.py",
             "negotiation/lm", "negotiation/env", "negotiation/agents", "protocol/domains"],
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
            body["deps"] += ["negotiation/lm", "negotiation/env", "protocol/domains", "${plan.out}/tokenizer"]
            body["params"][0]["protocol/${plan.study}/protocol.yaml"] += _LADDER_READS
        stages[name] = stage
    graph["stages"] = stages


def _undeclare_metrics(stage: dict[str, Any]) -> None:
    body = stage["do"] if "foreach" in stage else stage
    body.setdefault("outs", []).extend(body.pop("metrics", []))


def derive_study_pipeline(study: str, root: Path) -> str:
    """The text of ``pipelines/<study>/dvc.yaml`` derived from the top-level one."""
    from negotiation.study import load_study

    graph = yaml.safe_load((Path(root) / TOP_LEVEL).read_text(encoding="utf-8"))
    graph = copy.deepcopy(graph)
    graph["vars"] = [f"../plans/{study}.yaml", "../../params.yaml"]
    if load_study(study, root).protocol.tokenizer is not None:
        _add_ladder(graph)
    for stage in graph["stages"].values():
        _rebase_stage(stage)
        _undeclare_metrics(stage)
    # DVC collects the metrics and plots of every dvc.yaml in the repository; declaring this study's
    # (absent until it runs) would make `dvc metrics show` / `dvc plots show` of the demo
    # report "failed to load". They stay outputs; show them with an explicit path (docs/pipeline.md).
    graph.pop("plots", None)
    body = yaml.safe_dump(graph, sort_keys=False, default_flow_style=False, width=110)
    return HEADER.format(study=study) + body
