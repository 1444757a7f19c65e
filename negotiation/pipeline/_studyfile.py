"""Per-study DVC files: the top-level ``dvc.yaml`` is the default study's stage graph; every other
study gets ``pipelines/<study>/dvc.yaml``, derived from it so the graph is written once.

DVC cannot switch a ``vars`` file by parameter (``../shared/notes/dvc.md``), so a study needs its
own pipeline file; this derives it (other vars file, ``wdir`` at the repository root) and the
plan check verifies it is current.
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


def derive_study_pipeline(study: str, root: Path) -> str:
    """The text of ``pipelines/<study>/dvc.yaml`` derived from the top-level one."""
    graph = yaml.safe_load((Path(root) / TOP_LEVEL).read_text(encoding="utf-8"))
    graph = copy.deepcopy(graph)
    graph["vars"] = [f"../plans/{study}.yaml", "../../params.yaml"]
    for stage in graph["stages"].values():
        _rebase_stage(stage)
    for plot in graph.get("plots", []):
        for spec in plot.values():
            spec["y"] = {f"../../{path}": cols for path, cols in spec["y"].items()}
    body = yaml.safe_dump(graph, sort_keys=False, default_flow_style=False, width=110)
    return HEADER.format(study=study) + body
