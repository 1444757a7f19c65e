"""From a loaded study (``negotiation.protocol``) to the trainer's typed inputs.

Every number comes from ``protocol/<study>/protocol.yaml``; the recipe is passed on as the
protocol's own model, and this module maps the data sections and refuses recipes the trainers
do not implement (``recipe_problems``). Two things the protocol does not state
are fixed here and documented in ``docs/training.md``:

- where the validation set comes from: the protocol's ``training.validation_scenarios``
  scenarios from the top ``1 / VALIDATION_SHARE`` of the training seed block, which training
  then never draws from;
- the training seed of a run: the size's ``init_seed`` (the paper trains one seed per arm).
"""

from __future__ import annotations

from pathlib import Path

from negotiation.agents import Policy, PolicyArch
from negotiation.env import EnvConfig
from negotiation.errors import ConfigError
from negotiation.training._checkpoint import checkpoint_steps
from negotiation.training._config import ArmTraining, BuyerShare, TrainConfig, TrainData, recipe_problems

VALIDATION_SHARE = 10


def training_env(protocol) -> EnvConfig:
    """The engine configuration of the training phase (training-phase ACCEPT flag)."""
    from negotiation.protocol import env_config

    return env_config(protocol, "training")


def training_data(protocol) -> TrainData:
    """The training and validation scenario sources of a protocol: the one mapping both
    backends draw their scenarios through."""
    block = protocol.seeds.training
    split = block.stop - max(1, block.size // VALIDATION_SHARE)
    buyers = tuple(BuyerShare(spec=b.spec, weight=b.weight) for b in protocol.buyers.training)
    return TrainData(domains=tuple(protocol.domains.training), train_seeds=(block.start, split),
                     validation_seeds=(split, block.stop),
                     validation_scenarios=protocol.training.validation_scenarios, buyers=buyers,
                     dirichlet_alpha=protocol.environment.dirichlet_alpha)


def training_runs(study) -> list[str]:
    """Names of the study's training runs, parents before their continuations."""
    runs = {a.run: a for a in study.arms.values() if a.kind == "trained" and a.run}
    return sorted(runs, key=lambda r: (runs[r].parent_run is not None, r))


def train_config_for(study, run: str, *, parent: Path | None = None, steps: int | None = None,
                     protocol_hash: str = "", base: Path | None = None) -> TrainConfig:
    """The ``TrainConfig`` of training run ``run`` of ``study`` (a ``negotiation.protocol.Study``).

    ``parent`` is the ``step_N/`` folder a continuation starts from (its branch checkpoint); it
    is required exactly for continuations. ``steps`` is the run's budget as the pipeline plan
    states it (a continuation branched at ``b`` trains ``combined_steps - b``); default the
    protocol's rule (``initial_steps``, or ``continuation_steps`` for a continuation). ``base`` is
    the size's base checkpoint a fresh run starts from (``init@``'s output; default its untrained init).
    """
    where = f"protocol/{study.name}/arms.yaml"
    owners = study.run_owners(run)
    if not owners:
        raise ConfigError(f"{where}:arms: no trained arm has run {run!r}; "
                          f"runs: {training_runs(study)}")
    arm = study.arms[owners[0]].defining(run)
    protocol = study.run_protocol(run)  # with the values of deviations covering the run
    size = protocol.sizes[arm.size]
    if size.kind != "policy":
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:sizes.{arm.size}.kind: the demo "
                          f"trainer trains policy sizes; {size.kind!r} runs need the NeMo-RL "
                          "backend")
    if (arm.parent_run is None) != (parent is None):
        need = "needs the parent's final checkpoint" if arm.parent_run else "has no parent run"
        raise ConfigError(f"{where}:arms.{run}.parent_run: run {run!r} {need} "
                          f"(got parent={parent})")
    t = protocol.recipe_for(arm.size)
    problems = recipe_problems(t, tokens=False)
    if problems:
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:training.{problems[0]}")
    if steps is None:
        steps = t.continuation_steps if arm.parent_run else t.initial_steps
    arm_cfg = ArmTraining(study=study.name, arm=run, arch=PolicyArch(width=size.width), lr_multiple=arm.lr_multiple,
                          steps=steps, init_seed=size.init_seed, seed=size.init_seed,
                          parent=parent, parent_arm=arm.parent_run, base=base)
    return TrainConfig(recipe=t, data=training_data(protocol), arm=arm_cfg, protocol_hash=protocol_hash)


def branch_checkpoint(run_dir: Path, step: int) -> Path:
    """The ``step_N/`` folder a continuation branches from (``N`` = its declared branch step)."""
    steps = checkpoint_steps(run_dir)
    if step not in steps:
        raise ConfigError(f"{run_dir}/step_{step}:<dir>: the continuation branches at step {step}, but the parent "
                          f"run saved no such checkpoint (saved: {sorted(steps)})")
    return steps[step]


def final_checkpoint(run_dir: Path) -> Path:
    """The highest ``step_N/`` of a run (where a continuation branches from)."""
    steps = checkpoint_steps(run_dir)
    if not steps:
        raise ConfigError(f"{run_dir}:<dir>: no step_N/ checkpoint with training_info.json")
    return steps[max(steps)]


def write_initial_policy(study, size: str, folder: Path | None = None) -> Path:
    """Write the base policy of ``size`` (the base arm and every run's step 0) to ``folder``
    (default: the size's ``checkpoint`` in the protocol, relative to the repository root): its
    untrained init, warm-started by imitation where the protocol has a ``policy_warm_start``."""
    spec = study.protocol.sizes.get(size)
    if spec is None or spec.kind != "policy":
        known = sorted(k for k, v in study.protocol.sizes.items() if v.kind == "policy")
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:sizes.{size}: not a policy size "
                          f"(policy sizes: {known})")
    target = Path(folder) if folder is not None else Path(study.root) / spec.checkpoint
    if study.protocol.policy_warm_start is not None:
        from negotiation.training._imitation import write_imitated_policy

        return write_imitated_policy(study.protocol, size, target)
    Policy.init(PolicyArch(width=spec.width), spec.init_seed).save(target)
    return target
