"""Running one learning-ladder task end to end: base, token-level GRPO run, verdict.

The ladder (``protocol/<study>/learning.yaml``, issue 27) checks that the token trainer learns.
This sits above both the trainer (``negotiation.training.lm``) and the base builders
(``negotiation.ladder``), so the trainer's pipeline stages never depend on the builders. See
docs/training.md, "The learning ladder".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError
from negotiation.evaluation import folder_sha256
from negotiation.ladder import TOKENIZER_RECORD, WARM_START_RECORD, write_base, write_tokenizer
from negotiation.protocol import LearningLadder, LearningWarmStart, Protocol
from negotiation.training.lm import (
    CURVES_FILE, FROZEN_RATE, RESUME_FILE, LmRuntime, LmTrainConfig, needs_frozen_control, task_train_config, task_verdict,
    train_lm_arm, write_verdict,
)

__all__ = ["BASE_RECORD", "run_learning_task"]

BASE_RECORD = "base.json"
"""In a task's run folder: ``folder_sha256`` of the base it started from. A frozen control pairs
with a run only on the same weights (a GPU warm start does not repeat bit for bit, so a base
rebuilt on another machine is another base)."""


def _warm_protocol(protocol: Protocol, warm: LearningWarmStart) -> Protocol:
    """The protocol whose warm start (corpus, recipe, corpus buyers) builds the budget's base."""
    ws = protocol.warm_start
    corpus = ws.corpus.model_copy(update={k: getattr(warm, k) for k in ("sellers", "train_seeds_per_domain",
                                                                        "prompt_variants") if getattr(warm, k)})
    recipe = ws.model_copy(update={"corpus": corpus, **{k: getattr(warm, k) for k in ("batch_sequences",
                                                                                     "learning_rate") if getattr(warm, k)}})
    updates: dict[str, Any] = {"warm_start": recipe}
    if warm.buyers is not None:
        buyers = protocol.buyers.model_dump()
        buyers["training"] = [b.model_dump() for b in warm.buyers]
        updates["buyers"] = type(protocol.buyers).model_validate(buyers)
    return protocol.model_copy(update=updates)


def _base(protocol: Protocol, size: str, warm: LearningWarmStart | None, out: Path, device: str) -> Path:
    """The study's tokenizer and the size's base under ``out``, built once and then reused: a base
    folder is keyed by its warm start and complete once its ``warm_start.json`` exists."""
    tokenizer = out / "tokenizer"
    if not (tokenizer / TOKENIZER_RECORD).is_file():
        write_tokenizer(protocol, tokenizer)
    key = "study" if warm is None else hashlib.sha256(warm.model_dump_json().encode()).hexdigest()[:12]
    folder = out / f"base_{size}_{key}"
    if not (folder / WARM_START_RECORD).is_file():
        source = protocol if warm is None else _warm_protocol(protocol, warm)
        write_base(source, size, tokenizer, folder, steps=None if warm is None else warm.steps, device=device,
                   log=lambda _: None)
    return folder


def run_learning_task(protocol: Protocol, ladder: LearningLadder, name: str, *, machine: str, out: str | Path,
                      size: str | None = None, runtime: LmRuntime | None = None,
                      control: bool = False, resume: bool = False,
                      parts: tuple[str, ...] = ("run", "control")) -> dict[str, Any] | None:
    """Run task ``name`` end to end at its ``machine`` (``cpu``/``gpu``) budget: tokenizer and
    warm-started base (reused under ``out``), ``train_lm_arm`` in ``out/<name>_<size>``, then the
    pass criteria on its curves; writes and returns the verdict.

    A task whose criteria read against a frozen control (or ``control``) also trains the task at
    ``FROZEN_RATE`` in ``out/<name>_<size>_control``: same scenarios, same sample seeds, weights that
    never move; the verdict's ``paired`` reads every curve criterion as the run minus the control
    (for the record: only criteria that say ``against: frozen_control`` judge that way). ``resume``
    continues runs an earlier call left partial (from their last checkpoint, exactly); finished runs
    are kept. ``parts`` names the runs this call trains (``run``, ``control``): a process per part
    trains them side by side on one GPU after a call with ``parts=()`` built the base; the verdict
    is read only by a call that trains every part the task has (``None`` from the others)."""
    unknown = set(parts) - {"run", "control"}
    if unknown:
        raise ValueError(f"parts: {sorted(unknown)} are not run or control")
    task, budget = _task_budget(ladder, name, machine)
    size = size or budget.sizes[0]
    runtime = runtime or LmRuntime()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = _base(protocol, size, budget.warm_start, out, runtime.device)
    cfg = task_train_config(protocol, name, task, budget, size, base=base, runtime=runtime)
    run_dir = out / f"{name}_{size}"
    weights = folder_sha256(base) if parts else None  # the hash select records of a seller's weights
    if "run" in parts:
        _train(cfg, run_dir, resume, weights)
    control_dir = out / f"{name}_{size}_control" if control or needs_frozen_control(task) else None
    if control_dir is not None and "control" in parts:
        frozen = budget.model_copy(update={"learning_rate": FROZEN_RATE})
        _train(task_train_config(protocol, name, task, frozen, size, base=base, runtime=runtime), control_dir,
               resume, weights)
    if "run" not in parts or (control_dir is not None and "control" not in parts):
        return None
    if control_dir is not None:
        _check_same_base(run_dir, control_dir)
    verdict = {**_run_record(name, machine, size, budget, cfg, base), "reward": task.reward,
               **task_verdict(task, run_dir, control_dir)}
    write_verdict(run_dir, verdict)
    return verdict


def _task_budget(ladder: LearningLadder, name: str, machine: str) -> tuple[Any, Any]:
    """Task ``name`` and its budget on ``machine``, or a ConfigError naming the file and key."""
    if name not in ladder.tasks:
        raise ConfigError(f"protocol/{ladder.study}/learning.yaml:tasks: no task {name!r} (tasks: {list(ladder.tasks)})")
    task = ladder.tasks[name]
    budget = getattr(task, machine)
    if budget is None:
        raise ConfigError(f"protocol/{ladder.study}/learning.yaml:tasks.{name}.{machine}: the task has no "
                          f"{machine} budget")
    return task, budget


def _run_record(name: str, machine: str, size: str, budget: Any, cfg: LmTrainConfig, base: Path) -> dict[str, Any]:
    """What the verdict says the run was: budget, base, and the estimator it trained with."""
    recipe = cfg.run_protocol.recipe_for(size)
    return {"version": 1, "task": name, "machine": machine, "size": size, "steps": budget.steps,
            "warm_start": None if budget.warm_start is None else budget.warm_start.model_dump(mode="json"),
            "base": str(base), "learning_rate": budget.learning_rate, "seed": budget.seed,
            "estimator": {"baseline": recipe.baseline, "normalize_rewards": recipe.normalize_rewards}}


def _recorded_base(run_dir: Path) -> str | None:
    path = run_dir / BASE_RECORD
    return json.loads(path.read_text(encoding="utf-8"))["weights_sha256"] if path.is_file() else None


def _train(cfg: LmTrainConfig, run_dir: Path, resume: bool, weights: str | None) -> None:
    """Train (or continue) the run in ``run_dir`` from the base whose weights digest is ``weights``."""
    if resume and (run_dir / CURVES_FILE).is_file() and not (run_dir / RESUME_FILE).is_file():
        return  # finished by an earlier call: a finished run drops its resume state
    recorded = _recorded_base(run_dir)
    if resume and recorded not in (None, weights):
        raise ConfigError(f"{run_dir / BASE_RECORD}: weights_sha256 {recorded[:12]}... is not this base's "
                          f"({weights[:12]}...): the run cannot continue on another base; move the folder away")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / BASE_RECORD).write_text(json.dumps({"version": 1, "base": str(cfg.arm.base), "weights_sha256": weights},
                                                  indent=2) + "\n", encoding="utf-8")
    train_lm_arm(cfg, run_dir, track=False, resume=resume)


def _check_same_base(run_dir: Path, control_dir: Path) -> None:
    """Refuse a paired reading of a run and a control that started from different weights."""
    run, control = _recorded_base(run_dir), _recorded_base(control_dir)
    if run is None or control is None or run != control:
        raise ConfigError(f"{control_dir / BASE_RECORD}: weights_sha256 {control} does not match {run_dir / BASE_RECORD} "
                          f"({run}): a frozen control pairs only with a run from the same base weights "
                          f"(rebuilt bases differ on a GPU); move the control away and run again")
