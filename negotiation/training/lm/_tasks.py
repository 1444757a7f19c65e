"""The learning ladder's tasks (``protocol/lm/learning.yaml``) as token-trainer runs.

A task is data: changes to the study's recipe, buyers and reward kind (``LearningTask``). This
module turns (protocol, task, budget, size) into an ordinary ``LmTrainConfig`` with
``model_copy`` overrides, so the trainer under test is exactly the one every arm trains with,
and reads a finished run's curves against the task's pass criteria.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation.errors import ConfigError
from negotiation.protocol import (
    LearningBudget, LearningCriterion, LearningLadder, LearningTask, LearningWarmStart, Protocol,
)
from negotiation.training.lm._config import LmArm, LmRuntime, LmTrainConfig
from negotiation.training.lm._trainer import CURVES_FILE, VALIDATION_FILE, train_lm_arm

__all__ = ["VERDICT_FILE", "criterion_verdict", "run_learning_task", "task_train_config", "task_verdict"]

VERDICT_FILE = "verdict.json"
"""The verdict a task run writes beside its curves."""


def _task_recipe(protocol: Protocol, task: LearningTask, budget: LearningBudget, size: str) -> Any:
    """The size's recipe with the task's and the budget's overrides, re-validated."""
    base = protocol.recipe_for(size)
    group = budget.group_size or base.group_size
    scenarios = budget.scenarios_per_step or base.scenarios_per_step
    steps = budget.steps
    updates = {
        "learning_rate": budget.learning_rate,
        "lr_floor": budget.learning_rate * base.lr_floor / base.learning_rate,  # the recipe's floor ratio
        "group_size": group, "scenarios_per_step": scenarios, "episodes_per_step": group * scenarios,
        "rollout_turns": task.rollout_turns or base.rollout_turns,
        "warmup_steps": base.warmup_steps if task.warmup_steps is None else task.warmup_steps,
        "validation_scenarios": task.validation_scenarios or base.validation_scenarios,
        # one run, validated and saved at its start and end only: the task reads the curves
        "initial_steps": steps, "combined_steps": steps + 1, "validation_every": steps, "checkpoint_every": steps,
        "read_points": {},
    }
    return type(base).model_validate({**base.model_dump(), **updates})


def task_train_config(protocol: Protocol, name: str, task: LearningTask, budget: LearningBudget, size: str, *,
                      base: Path, runtime: LmRuntime | None = None) -> LmTrainConfig:
    """The ``LmTrainConfig`` of task ``name`` at ``size`` under ``budget`` (base: the size's
    warm-started Hugging Face folder). The recipe section the size trains with is replaced by the
    task's recipe and the training pool by the task's buyers; nothing else of the protocol changes."""
    if size not in budget.sizes:
        raise ConfigError(f"learning task {name!r}: size {size!r} is not in the budget's sizes {list(budget.sizes)}")
    recipe = _task_recipe(protocol, task, budget, size)
    section = "training" if protocol.recipe_for(size) is protocol.training else "gpu_training"
    updates: dict[str, Any] = {section: recipe}
    if task.training_buyers is not None:
        buyers = protocol.buyers.model_dump()
        buyers["training"] = [b.model_dump() for b in task.training_buyers]
        updates["buyers"] = type(protocol.buyers).model_validate(buyers)
    arm = LmArm(study=protocol.study, arm=f"learn_{name}_{size}", size=size, base=Path(base), lr_multiple=1.0,
                steps=budget.steps, seed=budget.seed)
    return LmTrainConfig(protocol=protocol.model_copy(update=updates), arm=arm, runtime=runtime or LmRuntime(),
                         reward=task.reward)


def criterion_verdict(criterion: LearningCriterion, values: list[float]) -> dict[str, Any]:
    """First-k mean, last-k mean, their change and whether it passes ``criterion``."""
    k = criterion.window
    if len(values) < 2 * k and criterion.metric != "validation/score":
        raise ValueError(f"{criterion.metric}: {len(values)} values, the criterion needs 2 x {k}")
    if len(values) < 2:
        raise ValueError(f"{criterion.metric}: {len(values)} values, a change needs at least 2")
    k = min(k, len(values) // 2)
    first, last = float(pd.Series(values[:k]).mean()), float(pd.Series(values[-k:]).mean())
    change = last - first
    moved = change if criterion.direction == "increase" else -change
    return {"metric": criterion.metric, "direction": criterion.direction, "window": k,
            "min_change": criterion.min_change, "first_mean": first, "last_mean": last, "change": change,
            "passed": bool(moved >= criterion.min_change), "values": [float(v) for v in values]}


def task_verdict(task: LearningTask, run_dir: Path) -> dict[str, Any]:
    """Every criterion of ``task`` read from a finished run's ``curves.csv`` / ``validation.csv``."""
    curves = pd.read_csv(Path(run_dir) / CURVES_FILE)
    validation = pd.read_csv(Path(run_dir) / VALIDATION_FILE)
    results = []
    for c in task.criteria:
        table = validation if c.metric == "validation/score" else curves
        results.append(criterion_verdict(c, [float(v) for v in table[c.metric]]))
    return {"criteria": results, "passed": all(r["passed"] for r in results)}


def write_verdict(run_dir: Path, verdict: dict[str, Any]) -> Path:
    """``verdict.json`` in ``run_dir``."""
    path = Path(run_dir) / VERDICT_FILE
    path.write_text(json.dumps(verdict, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


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
    from negotiation.ladder import TOKENIZER_RECORD, WARM_START_RECORD, write_base, write_tokenizer

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
                      size: str | None = None, runtime: LmRuntime | None = None) -> dict[str, Any]:
    """Run task ``name`` end to end at its ``machine`` (``cpu``/``gpu``) budget: tokenizer and
    warm-started base (reused under ``out``), ``train_lm_arm`` in ``out/<name>_<size>``, then the
    pass criteria on its curves; writes and returns the verdict."""
    if name not in ladder.tasks:
        raise ConfigError(f"protocol/{ladder.study}/learning.yaml:tasks: no task {name!r} (tasks: {list(ladder.tasks)})")
    task = ladder.tasks[name]
    budget = getattr(task, machine)
    if budget is None:
        raise ConfigError(f"protocol/{ladder.study}/learning.yaml:tasks.{name}.{machine}: the task has no "
                          f"{machine} budget")
    size = size or budget.sizes[0]
    runtime = runtime or LmRuntime()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = _base(protocol, size, budget.warm_start, out, runtime.device)
    cfg = task_train_config(protocol, name, task, budget, size, base=base, runtime=runtime)
    run_dir = out / f"{name}_{size}"
    train_lm_arm(cfg, run_dir, track=False)
    verdict = {"version": 1, "task": name, "machine": machine, "size": size, "steps": budget.steps,
               "warm_start": None if budget.warm_start is None else budget.warm_start.model_dump(mode="json"),
               "base": str(base), "learning_rate": budget.learning_rate,
               "seed": budget.seed, "reward": task.reward, **task_verdict(task, run_dir)}
    write_verdict(run_dir, verdict)
    return verdict
