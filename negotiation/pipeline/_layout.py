"""Where the generated DVC files of a study live (relative to the root), read by the plan and the
file generator alike (its own module so neither imports the other back)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ARMS", "PARAMS", "arm_dir", "pipeline_dir"]

PARAMS = "params.yaml"
ARMS = "arms"


def pipeline_dir(study: str, profile: str = "cpu") -> Path:
    """The study's pipeline folder under ``pipelines/`` (relative to the root): its arm folders live in it."""
    return Path("pipelines") / study / ("gpu" if profile == "gpu" else "")


def arm_dir(study: str, arm: str, profile: str = "cpu") -> Path:
    """An arm's folder, relative to the root: its ``dvc.yaml`` and ``params.yaml``."""
    return pipeline_dir(study, profile) / ARMS / arm
