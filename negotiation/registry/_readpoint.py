"""The read-point rule: which saved checkpoint of a run an arm is evaluated at, and the select call.

Arms are matched on *combined* optimizer steps: a continuation's own step ``s`` after a branch
from parent step ``b`` is combined step ``b + s``. The rule asks for own step
``combined - b``; when that checkpoint was not saved (the paper lost two final checkpoints to
an interrupted upload) the nearest earlier saved step is read instead and marked as a
substitution, which the audit then requires a deviation to cover.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, StrictModel
from negotiation.study import SelectionRecord, Study

__all__ = ["CheckpointError", "ReadPoint", "list_checkpoint_steps", "select_checkpoint", "select_read_point"]

_STEP_DIR = re.compile(r"^step_(\d+)$")


class CheckpointError(ConfigError):
    """No checkpoint can satisfy the rule, or a checkpoint folder is malformed."""


class ReadPoint(StrictModel):
    """Outcome of the read-point rule for one arm."""

    rule_step: int
    """Own step of the run the rule asks for."""
    step: int
    """Own step to read."""
    offset: int
    """Parent step the run branched from (0 for an initial run)."""
    substitution: bool
    """True when ``step`` is an earlier stand-in for a missing ``rule_step``."""

    @property
    def combined_step(self) -> int:
        """Combined optimizer step of the checkpoint read."""
        return self.offset + self.step


def select_read_point(combined_step: int, available_steps: Iterable[int], *, offset: int = 0) -> ReadPoint:
    """Apply the rule: the run's step ``combined_step - offset``, else the nearest earlier saved one.

    Args:
        combined_step: combined optimizer step the protocol reads the arm at (e.g. 104).
        available_steps: own steps of the run with a saved checkpoint (e.g. 8, 16, ..., 56).
        offset: parent step a continuation branched from; 0 for an initial run.

    Raises:
        CheckpointError: the rule's step is not positive, or no saved step lies at or before it.
    """
    rule_step = combined_step - offset
    if rule_step < 0:
        raise CheckpointError(
            f"<read rule>:combined_step: {combined_step} lies before the branch step {offset}"
        )
    steps = sorted(set(int(s) for s in available_steps))
    earlier = [s for s in steps if s <= rule_step]
    if not earlier:
        raise CheckpointError(
            f"<read rule>:available_steps: no checkpoint at or before step {rule_step} (have {steps})"
        )
    step = earlier[-1]
    return ReadPoint(rule_step=rule_step, step=step, offset=offset, substitution=step != rule_step)


def list_checkpoint_steps(run_dir: Path) -> list[int]:
    """Steps of the ``step_N/`` folders of a run that hold a ``training_info.json`` naming step N.

    A ``step_N`` folder without that file is an interrupted save and does not count; one whose
    file disagrees with its name is an error, because reading it would read the wrong weights.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}:<dir>: no such run directory")
    steps = []
    for folder in sorted(run_dir.iterdir()):
        match = _STEP_DIR.match(folder.name)
        info = folder / "training_info.json"
        if not (folder.is_dir() and match and info.is_file()):
            continue
        try:
            recorded = json.loads(info.read_text(encoding="utf-8")).get("step")
        except (OSError, json.JSONDecodeError, AttributeError) as exc:
            raise CheckpointError(f"{info}:step: unreadable ({exc})") from exc
        if recorded != int(match.group(1)):
            raise CheckpointError(f"{info}:step: {recorded!r} differs from the folder name {folder.name!r}")
        steps.append(int(match.group(1)))
    return sorted(steps)


def select_checkpoint(
    study: Study,
    arm_name: str,
    run_dir: Path,
    *,
    arm: Arm | None = None,
    parent_step: int | None = None,
    parent_run_dir: Path | None = None,
) -> SelectionRecord:
    """Choose the checkpoint of ``run_dir`` that arm ``arm_name`` is evaluated at.

    Args:
        study: the loaded study (its protocol gives the read step and the initial run length).
        arm_name: arm to select for; looked up in the frozen matrix unless ``arm`` is given
            (pass the ``AddedArm`` for arms added in the registry).
        run_dir: the arm's training run directory holding ``step_N/`` checkpoints.
        arm: the arm definition, when it is not in the frozen matrix.
        parent_step: for a continuation, the parent step it actually branched from, as its
            training stage recorded it.
        parent_run_dir: for a continuation without ``parent_step``: the parent run, whose final
            checkpoint at or before ``initial_steps`` is the branch (the protocol's rule).
    """
    arm = arm if arm is not None else study.arms.get(arm_name)
    if arm is None or arm.kind != "trained":
        raise ConfigError(f"{study.show(study.dir / 'arms.yaml')}:arms.{arm_name}: not a trained arm of {study.name!r}")
    offset = None
    if arm.parent_run is not None:
        if parent_step is None and parent_run_dir is None:
            raise ConfigError(f"<select>:{arm_name}: a continuation needs parent_step or parent_run_dir")
        if parent_step is None:
            initial = study.protocol.recipe_for(arm.size).initial_steps
            parent_step = select_read_point(initial, list_checkpoint_steps(Path(parent_run_dir))).step
        offset = parent_step
    available = list_checkpoint_steps(Path(run_dir))
    point = select_read_point(study.read_step(arm), available, offset=offset or 0)
    return SelectionRecord(
        version=1, study=study.name, arm=arm_name, run=arm.run or "", parent_step=offset,
        rule_step=point.rule_step, step=point.step, substitution=point.substitution,
        available_steps=tuple(available), checkpoint=str(Path(run_dir) / f"step_{point.step}"),
        protocol_hash=study.lock_hash,
    )
