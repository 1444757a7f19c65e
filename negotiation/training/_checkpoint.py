"""Checkpoint folders in the NeMo-RL layout: ``<run dir>/step_N/`` with ``training_info.json``.

The demo trainer's ``step_N/`` holds ``weights.pt`` and ``config.json`` (the policy, loadable as
``policy:<run dir>/step_N``) and ``training_info.json`` (``TrainingInfo``). ``N`` is the run's
own optimizer step, as in NeMo-RL: a continuation branched from its parent's ``step_64`` writes
``step_8`` .. ``step_40`` (combined steps 72 .. 104, recorded beside it), so the registry's
read-point rule (combined step minus branch step) serves demo and NeMo-RL runs alike.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from negotiation.agents import Policy
from negotiation.errors import ConfigError, format_validation_error

TRAINING_INFO_FILE = "training_info.json"
_STEP_DIR = re.compile(r"^step_(\d+)$")


class TrainingInfo(BaseModel):
    """What ``training_info.json`` records about one checkpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: int = 1
    """Version of this record."""
    step: int = Field(ge=0)
    """Optimizer steps of the run that wrote this checkpoint (equals the folder's N)."""
    combined_step: int = Field(ge=0)
    """Optimizer steps along the whole chain: ``branch_step + step``."""
    branch_step: int = Field(ge=0)
    """Combined step of the parent checkpoint this run continued from (0 for a fresh run)."""
    arm: str
    """Arm whose run wrote this checkpoint."""
    seed: int
    """The run's training seed."""
    lr_multiple: float
    """The run's learning-rate multiple."""
    consumed_scenarios: int = Field(ge=0)
    """Training dataset items used along the chain up to this step."""
    base_checkpoint: str
    """The chain's step-0 policy (the KL reference), relative to this folder."""
    parent_checkpoint: str | None = None
    """The checkpoint this run continued from, relative to this folder; None for a fresh run."""
    val_score: float | None = None
    """Validation mean S at this step, when validation ran at it."""
    mlflow_run_id: str | None = None
    """The MLflow run of the arm, when tracking was on."""


def step_dir(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / f"step_{step}"


def write_checkpoint(folder: Path, policy: Policy, info: TrainingInfo) -> Path:
    """Write the policy and its ``training_info.json`` into ``folder``."""
    policy.save(folder)
    (Path(folder) / TRAINING_INFO_FILE).write_text(info.model_dump_json(indent=2) + "\n",
                                                  encoding="utf-8")
    return Path(folder)


def read_training_info(folder: Path) -> TrainingInfo:
    """Read ``<folder>/training_info.json``; ``ConfigError`` names the file and key."""
    path = Path(folder) / TRAINING_INFO_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}:<file>: not a checkpoint folder (no {TRAINING_INFO_FILE})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:line {exc.lineno}: invalid JSON: {exc.msg}") from exc
    try:
        return TrainingInfo.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from exc


def relative_to_folder(target: Path, folder: Path) -> str:
    """``target`` as a path relative to ``folder`` (checkpoints move with their run dir)."""
    return Path(os.path.relpath(Path(target).resolve(), Path(folder).resolve())).as_posix()


def resolve_from(folder: Path, relative: str) -> Path:
    return (Path(folder) / relative).resolve()


def checkpoint_steps(run_dir: Path) -> dict[int, Path]:
    """Every ``step_N/`` folder of a run directory that holds ``training_info.json``, by N."""
    found: dict[int, Path] = {}
    for child in sorted(Path(run_dir).iterdir()) if Path(run_dir).is_dir() else []:
        match = _STEP_DIR.match(child.name)
        if match and (child / TRAINING_INFO_FILE).is_file():
            found[int(match.group(1))] = child
    return dict(sorted(found.items()))
