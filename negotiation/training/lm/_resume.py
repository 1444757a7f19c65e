"""Exact resume of an interrupted token-level run (not a continuation).

A GPU call has a time limit, so one run may need several calls. Resuming continues the SAME run:
its schedule step, optimizer moments and step counts, data position, sample-seed Generator, torch
RNG, curves and timing, so the resumed run's curves and checkpoints equal an uninterrupted run's.
A continuation arm (``LmArm.parent``) is different: a new run from a parent checkpoint with a
restarted schedule, a protocol concept.

Every checkpoint save of a run also writes ``<run dir>/resume.pt`` (after ``step_N/`` and the
curves, replaced atomically): the ``ResumeRecord`` as JSON beside the optimizer's state dict and
the torch RNG states. The weights come from ``step_N/`` (float32 masters, exact). A run that
finishes deletes the file, so a finished run's folder is what it was before resume existed. A
folder with ``resume.pt`` is a partial run: training into it without ``resume=True`` is refused,
so a rerun never throws a GPU result away.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from negotiation.errors import ConfigError, format_validation_error
from negotiation.training._checkpoint import TRAINING_INFO_FILE, step_dir
from negotiation.training.lm._config import LmTrainConfig

__all__ = ["RESUME_FILE", "ResumeRecord", "ResumeState", "check_run_folder", "read_resume", "write_resume"]

RESUME_FILE = "resume.pt"


class ResumeRecord(BaseModel):
    """What a run had done at its last checkpoint, besides its weights and optimizer tensors."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              ser_json_inf_nan="constants")
    version: int = 1
    """Version of this record."""
    step: int = Field(ge=0)
    """Own step of the checkpoint (``step_N/``) the run resumes from; its validation and save are done."""
    consumed: int = Field(ge=0)
    """``RunLedger.consumed``: training scenarios drawn by the chain so far."""
    rng_state: dict[str, Any]
    """``RunLedger.rng.bit_generator.state``: the Generator that draws the sample seeds."""
    curves: list[dict[str, int | float]]
    """``RunLedger.curves``: one row per own step done."""
    val_scores: dict[int, float]
    """``RunLedger.val_scores``."""
    checkpoints: dict[int, str]
    """``RunLedger.checkpoints``."""
    timing: list[dict[str, int | float]]
    """The trainer's timing rows so far (wall-clock; not compared)."""
    config: dict[str, Any]
    """``LmTrainConfig.model_dump(mode="json")`` of the run: a resume must match it key for key."""


class ResumeState(BaseModel):
    """``resume.pt`` read back: the record and the tensors."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, use_attribute_docstrings=True)
    record: ResumeRecord
    """The JSON part."""
    optimizer: dict[str, Any]
    """``MasterAdamW.state_dict()``: AdamW moments and step counts of the float32 masters."""
    torch_rng: torch.Tensor
    """``torch.get_rng_state()``."""
    cuda_rng: list[torch.Tensor] | None = None
    """``torch.cuda.get_rng_state_all()`` when CUDA was available."""


def write_resume(run_dir: Path, state: ResumeState) -> Path:
    """Write ``<run_dir>/resume.pt`` atomically (a kill mid-write keeps the previous one)."""
    path, tmp = Path(run_dir) / RESUME_FILE, Path(run_dir) / (RESUME_FILE + ".tmp")
    torch.save({"record": state.record.model_dump_json(), "optimizer": state.optimizer,
                "torch_rng": state.torch_rng, "cuda_rng": state.cuda_rng}, tmp)
    os.replace(tmp, path)
    return path


def read_resume(run_dir: Path, cfg: LmTrainConfig) -> ResumeState:
    """Read ``<run_dir>/resume.pt`` and check it belongs to ``cfg``'s run; ``ConfigError`` names
    the file and the first key that differs."""
    path = Path(run_dir) / RESUME_FILE
    raw = torch.load(path, weights_only=True)
    try:
        record = ResumeRecord.model_validate_json(raw["record"])
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from exc
    problem = first_difference(record.config, cfg.model_dump(mode="json"), "config")
    if problem is not None:
        raise ConfigError(f"{path}:{problem}; a resume continues the same run: use its config, or a new folder")
    return ResumeState(record=record, optimizer=raw["optimizer"], torch_rng=raw["torch_rng"], cuda_rng=raw["cuda_rng"])


def first_difference(saved: Any, now: Any, key: str) -> str | None:
    """``key.path: the partial run has X, this call Y`` for the first differing leaf, else None."""
    if isinstance(saved, dict) and isinstance(now, dict):
        for k in sorted(set(saved) | set(now), key=str):
            found = first_difference(saved.get(k, "<missing>"), now.get(k, "<missing>"), f"{key}.{k}")
            if found is not None:
                return found
        return None
    if isinstance(saved, list) and isinstance(now, list) and len(saved) == len(now):
        return next((d for i, (a, b) in enumerate(zip(saved, now))
                     if (d := first_difference(a, b, f"{key}[{i}]")) is not None), None)
    return None if saved == now else f"{key}: the partial run has {saved!r}, this call {now!r}"


def check_run_folder(run_dir: Path, cfg: LmTrainConfig, resume: bool) -> ResumeState | None:
    """The state to resume from, or None for a fresh start; refuses what would lose a result.

    - ``resume.pt`` present, ``resume`` false: a partial run would be overwritten (refused).
    - ``resume`` true, no ``resume.pt``, the run's last ``step_N/`` present: it finished (refused).
    - ``resume`` true, no ``resume.pt`` otherwise: nothing was saved yet; a fresh start.
    """
    run_dir = Path(run_dir)
    path = run_dir / RESUME_FILE
    if path.is_file():
        if not resume:
            raise ConfigError(f"{path}: {run_dir} holds a partial run; pass resume=True to continue it, "
                              "or train into a new folder (a partial run is never overwritten)")
        return read_resume(run_dir, cfg)
    if resume and (step_dir(run_dir, cfg.arm.steps) / TRAINING_INFO_FILE).is_file():
        raise ConfigError(f"{step_dir(run_dir, cfg.arm.steps)}: the run in {run_dir} finished; nothing to resume")
    return None
