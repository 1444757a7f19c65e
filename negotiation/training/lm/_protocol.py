"""From a loaded study to the token trainer's typed inputs (``LmTrainConfig``).

Every number comes from ``protocol/<study>/protocol.yaml``; this module only says which run is
trained from which folder. The training seed of a run is its size's ``init_seed`` where the size
has one (the ``lm`` ladder), else 0 (the paper trains one seed per arm).
"""

from __future__ import annotations

from pathlib import Path

from negotiation.errors import ConfigError
from negotiation.training._config import recipe_problems
from negotiation.training.lm._config import LmArm, LmRuntime, LmTrainConfig

__all__ = ["lm_train_config_for"]


def lm_train_config_for(study, run: str, arm, *, base: Path, parent: Path | None = None,
                        steps: int | None = None, runtime: LmRuntime | None = None,
                        protocol_hash: str = "") -> LmTrainConfig:
    """The ``LmTrainConfig`` of training run ``run`` of ``study`` (a ``negotiation.protocol.Study``).

    Args:
        arm: the trained arm (frozen or registry-added) whose entry defines the run.
        base: Hugging Face folder of the size's base checkpoint.
        parent: the ``step_N/`` folder a continuation starts from (its branch checkpoint);
            required exactly for continuations.
        steps: the run's budget as the pipeline plan states it (a continuation branched at
            ``b`` trains ``combined_steps - b``); default the protocol's rule.
        runtime: machine settings (default: the CPU, float32).
    """
    where = f"protocol/{study.name}/arms.yaml:arms.{run}"
    try:
        arm = arm.defining(run)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    if (arm.parent_run is None) != (parent is None):
        need = "needs the parent's final checkpoint" if arm.parent_run else "has no parent run"
        raise ConfigError(f"{where}.parent_run: run {run!r} {need} (got parent={parent})")
    protocol = study.run_protocol(run)  # the frozen recipe with the values of deviations covering the run
    t = protocol.recipe_for(arm.size)
    problems = recipe_problems(t, tokens=True)  # as the demo adapter: one line, not a validation traceback
    if problems:
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:{protocol.recipe_key_for(arm.size)}.{problems[0]}")
    if steps is None:
        steps = t.continuation_steps if arm.parent_run else t.initial_steps
    seed = int(getattr(protocol.sizes[arm.size], "init_seed", 0))
    lm_arm = LmArm(study=study.name, arm=run, size=arm.size, base=Path(base), lr_multiple=arm.lr_multiple,
                   steps=steps, seed=seed, parent=parent, parent_arm=arm.parent_run)
    return LmTrainConfig(protocol=protocol, arm=lm_arm, runtime=runtime or LmRuntime(),
                         protocol_hash=protocol_hash)
