"""The select stage's library call: apply the read-point rule to a run and return the record."""

from __future__ import annotations

from pathlib import Path

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, Study, protocol_hash
from negotiation.registry._readpoint import list_checkpoint_steps, select_read_point
from negotiation.registry._records import SelectionRecord

__all__ = ["select_checkpoint"]


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
            initial = study.protocol.training.initial_steps
            parent_step = select_read_point(initial, list_checkpoint_steps(Path(parent_run_dir))).step
        offset = parent_step
    available = list_checkpoint_steps(Path(run_dir))
    point = select_read_point(study.read_step(arm), available, offset=offset or 0)
    return SelectionRecord(
        version=1, study=study.name, arm=arm_name, run=arm.run or "", parent_step=offset,
        rule_step=point.rule_step, step=point.step, substitution=point.substitution,
        available_steps=tuple(available), checkpoint=str(Path(run_dir) / f"step_{point.step}"),
        protocol_hash=protocol_hash(study.name, study.root),
    )
