"""Where the generated DVC files of a study live (relative to the root), read by the plan and the
file generator alike (its own module so neither imports the other back).

The default study's files belong to the repository's DVC project. Every other study's folder
``pipelines/<study>/`` is a DVC project of its own (``dvc init --subdir``), so the root's bare
``dvc status``, ``dvc exp run`` and ``dvc exp show`` see the default study alone, and a study that
never ran stays out of them. DVC keeps a project's outputs inside it and runs its stages inside
it: the project links ``outputs`` and ``metrics`` back to the root's (``PROJECT_LINKS``), so its
stages name outputs by the paths every script and record uses, and each command starts with a
``cd`` to the root (docs/pipeline.md, "One DVC project per study").
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ARMS", "DEFAULT_STUDY", "PARAMS", "PROJECT_LINKS", "arm_dir", "pipeline_dir", "project_dir"]

PARAMS = "params.yaml"
ARMS = "arms"
DEFAULT_STUDY = "demo"
PROJECT_LINKS = ("outputs", "metrics")
"""The root folders a study's own DVC project reaches through a link of the same name in it."""


def pipeline_dir(study: str, profile: str = "cpu") -> Path:
    """The study's pipeline folder under ``pipelines/`` (relative to the root): its arm folders live in it."""
    return Path("pipelines") / study / ("gpu" if profile == "gpu" else "")


def project_dir(study: str) -> Path:
    """The root of the DVC project holding the study's files, relative to the repository root:
    ``.`` for the default study, ``pipelines/<study>`` (both profiles) for any other."""
    return Path() if study == DEFAULT_STUDY else pipeline_dir(study)


def arm_dir(study: str, arm: str, profile: str = "cpu") -> Path:
    """An arm's folder, relative to the root: its ``dvc.yaml`` and ``params.yaml``."""
    return pipeline_dir(study, profile) / ARMS / arm
