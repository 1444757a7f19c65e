"""The demo GRPO trainer on the CPU, top to bottom (CleanRL style).

One call of ``train_arm`` trains one arm:

1. Seeding block: the size's ``init_seed`` fixes the initial weights (``Policy.init``); the
   run's ``seed`` fixes torch's global stream, the data order (``training_items``) and the
   rollouts' sample seeds (one ``numpy.random.Generator``); torch runs single-threaded, so the
   same seeds give bit-identical checkpoints and curves.
2. Start: a fresh policy written as ``step_0/`` (the chain's base), or a parent ``step_N/``
   whose chain base stays the KL reference (a continuation never re-bases the KL).
3. Each step: ``scenarios_per_step`` x ``group_size`` rollouts played in lockstep through the
   engine; Eq. 1 rewards
   (training-phase ACCEPT flag from the ``EnvConfig``); leave-one-out normalized advantages
   per group; one AdamW step on the token-level PPO-clipped loss plus ``kl_coef`` x k3 KL to
   the base; the learning rate from a warmup-cosine schedule that restarts in a continuation.
4. Validation (mean S on the fixed validation set) at the first step and every
   ``val_period`` steps; ``step_N/`` every ``checkpoint_period`` steps and at the end; curves to
   ``curves.csv`` / ``validation.csv`` and MLflow.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from negotiation.agents._policy import Policy
from negotiation.agents._policy_net import (
    PolicyArch,
    feature_tensors,
    token_logprobs_entropy,
    token_mask,
)
from negotiation.env import EnvConfig
from negotiation.training._checkpoint import (
    TrainingInfo, read_training_info, relative_to_folder, resolve_from, step_dir, write_checkpoint,
)
from negotiation.training._config import TrainConfig
from negotiation.training._data import ScenarioMaker, TrainItem, training_items, validation_items
from negotiation.training._grpo import MAX_GRAD_NORM, clipped_surrogate, k3_kl, loo_advantages, lr_at, masked_mean
from negotiation.training._rollout import Rollouts, play
from negotiation.tracking import MlflowTracker, NullTracker, experiment_name, flatten, git_commit

CURVES_FILE, VALIDATION_FILE = "curves.csv", "validation.csv"


@dataclass
class _State:
    policy: Policy
    base: torch.nn.Module
    base_dir: Path
    optimizer: torch.optim.Optimizer
    rng: np.random.Generator
    branch_step: int
    """Combined step the run starts from (the parent's; 0 for a fresh run)."""
    consumed: int
    parent_dir: Path | None
    curves: list[dict[str, float]] = field(default_factory=list)
    val_scores: dict[int, float] = field(default_factory=dict)
    checkpoints: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainSummary:
    """What ``train_arm`` produced."""

    arm: str
    run_dir: Path
    branch_step: int
    """Combined step the run started from (0 for a fresh run)."""
    steps: int
    """Own optimizer steps trained."""
    checkpoints: dict[int, str]
    """Own step -> ``step_N`` folder written."""
    val_scores: dict[int, float]
    """Own step -> validation mean S."""
    seconds: float
    """Wall-clock seconds of the call."""
    cpu_seconds: float
    """CPU seconds of this process during the call (what the run costs on a loaded machine)."""
    mlflow_run_id: str | None


def _start(cfg: TrainConfig, run_dir: Path) -> _State:
    arm, recipe = cfg.arm, cfg.recipe
    torch.manual_seed(arm.seed)  # nothing below draws from it today; a dropout later would
    if arm.parent is None:
        arch = PolicyArch(width=arm.width, depth=arm.depth, value_bins=arm.value_bins)
        policy = Policy.init(arch, arm.init_seed)
        base_dir, branch, consumed = step_dir(run_dir, 0), 0, 0
    else:
        info = read_training_info(arm.parent)
        policy, base_dir = Policy.load(arm.parent), resolve_from(arm.parent, info.base_checkpoint)
        branch, consumed = info.combined_step, info.consumed_scenarios
    base = Policy.load(base_dir).net if arm.parent is not None else copy.deepcopy(policy.net)
    base.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.net.parameters(), lr=recipe.learning_rate * arm.lr_multiple,
                                  betas=recipe.optimizer.betas,
                                  weight_decay=recipe.optimizer.weight_decay)
    # Continuations draw different sample seeds from their parent by keying on the branch step.
    rng = np.random.default_rng(np.random.SeedSequence([arm.seed, branch]))
    return _State(policy, base, base_dir, optimizer, rng, branch, consumed, arm.parent)


def _jobs(items: list[TrainItem], seeds: np.ndarray,
          maker: ScenarioMaker) -> list[tuple[Any, Any, int]]:
    return [(maker.scenario(it), maker.buyer(it), int(s))
            for it, row in zip(items, seeds) for s in row]


def _grpo_update(st: _State, ro: Rollouts, adv: np.ndarray, cfg: TrainConfig,
                 lr: float) -> dict[str, float]:
    recipe = cfg.recipe
    for group in st.optimizer.param_groups:
        group["lr"] = lr
    fb = feature_tensors(ro.features)
    actions = torch.from_numpy(ro.actions)
    mask = token_mask(fb, actions)
    adv_tok = torch.from_numpy(adv[ro.row_episode]).float().unsqueeze(1)
    with torch.no_grad():
        ref_logp, _ = token_logprobs_entropy(st.base(fb), actions)
    logp, entropy = token_logprobs_entropy(st.policy.net(fb), actions)
    # One optimizer step per GRPO step (global batch = all episodes): the rollout policy is the
    # current one, so the old log-probs are the current ones detached and the ratio starts at 1.
    ratio = torch.exp(logp - logp.detach())
    pg = clipped_surrogate(ratio, adv_tok, recipe.clip.low, recipe.clip.high)
    kl = k3_kl(logp, ref_logp)
    loss = masked_mean(pg + recipe.kl.coefficient * kl, mask)
    st.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(st.policy.net.parameters(), MAX_GRAD_NORM)
    st.optimizer.step()
    return {"train/loss": float(loss.detach()),
            "train/kl_penalty": float(masked_mean(kl.detach(), mask)),
            "train/entropy": float(masked_mean(entropy.detach(), mask)), "train/lr": lr,
            "train/grad_norm": float(grad_norm)}


def _episode_stats(ro: Rollouts) -> dict[str, float]:
    eps = ro.episodes
    return {"train/reward": float(ro.rewards.mean()), "train/score": float(ro.scores.mean()),
            "train/deal_rate": float(np.mean([e.deal for e in eps])),
            "train/mean_rounds": float(np.mean([e.n_rounds for e in eps])),
            "train/bad_turn_rate": float(sum(e.n_bad("seller") for e in eps)
                                         / max(1, sum(e.n_turns_of("seller") for e in eps)))}


def _validate(st: _State, items: list[TrainItem], maker: ScenarioMaker, env: EnvConfig,
              spec: str) -> float:
    # Sample seed = scenario seed: the policy samples exactly as it will in evaluation.
    jobs = [(maker.scenario(it), maker.buyer(it), it.seed) for it in items]
    return float(play(st.policy, spec, jobs, env).scores.mean())


def _save(st: _State, cfg: TrainConfig, run_dir: Path, step: int, tracker: NullTracker) -> None:
    folder = step_dir(run_dir, step)
    parent = relative_to_folder(st.parent_dir, folder) if st.parent_dir is not None else None
    info = TrainingInfo(step=step, combined_step=st.branch_step + step,
                        branch_step=st.branch_step, arm=cfg.arm.arm,
                        seed=cfg.arm.seed, lr_multiple=cfg.arm.lr_multiple,
                        consumed_scenarios=st.consumed,
                        base_checkpoint=relative_to_folder(st.base_dir, folder),
                        parent_checkpoint=parent, val_score=st.val_scores.get(step),
                        mlflow_run_id=tracker.run_id)
    write_checkpoint(folder, st.policy, info)
    st.checkpoints[step] = folder.as_posix()


def _tracker(cfg: TrainConfig, env: EnvConfig, track: bool, parent_run: str | None) -> NullTracker:
    if not track:
        return NullTracker()
    arm = cfg.arm
    params = flatten({"recipe": cfg.recipe.model_dump(mode="json"), "data": cfg.data.model_dump(mode="json"),
                      "arm": arm.model_dump(mode="json"), "env": vars(env)})
    tags = {"study": arm.study, "arm": arm.arm, "size": arm.width, "lr_multiple": arm.lr_multiple,
            "parent_run": parent_run or "", "parent_arm": arm.parent_arm or "",
            "protocol_hash": cfg.protocol_hash, "git_commit": git_commit(), "phase": "training"}
    return MlflowTracker(experiment_name(arm.study), arm.arm, params, tags)


def _write_curves(st: _State, run_dir: Path) -> None:
    pd.DataFrame(st.curves).to_csv(run_dir / CURVES_FILE, index=False)
    val = pd.DataFrame({"step": list(st.val_scores),
                        "combined_step": [st.branch_step + s for s in st.val_scores],
                        "validation/score": list(st.val_scores.values())})
    val.to_csv(run_dir / VALIDATION_FILE, index=False)


def train_arm(cfg: TrainConfig, env: EnvConfig, run_dir: str | Path, *, track: bool = True,
              threads: int = 1, on_step: Callable[[int, int, dict[str, float]], None] | None = None) -> TrainSummary:
    """Train one arm; write ``run_dir`` (``step_N/`` folders, ``curves.csv``, ``validation.csv``).

    Args:
        cfg: recipe, data and arm (numbers from the study protocol).
        env: environment constants; training uses the training-phase ACCEPT flag.
        run_dir: output folder of the arm; created if missing.
        track: log the run to MLflow (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
        threads: torch CPU threads while training (restored after); 1 is fastest for these
            small networks and keeps results identical across runs.
        on_step: ``(own step done, own steps, metrics)`` after each optimizer step (progress).
    """
    t0, cpu0 = time.perf_counter(), time.process_time()
    run_dir, old_threads = Path(run_dir), torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        st = _start(cfg, run_dir)
        parent_run = read_training_info(cfg.arm.parent).mlflow_run_id if cfg.arm.parent else None
        tracker = _tracker(cfg, env, track, parent_run)
        try:
            _loop(st, cfg, env, run_dir, tracker, on_step)
        except BaseException:
            tracker.finish("FAILED")
            raise
        paths = " ".join(st.checkpoints[s] for s in sorted(st.checkpoints))
        tracker.set_tags({"checkpoints": paths})
        tracker.finish()
    finally:
        torch.set_num_threads(old_threads)
    _write_curves(st, run_dir)
    return TrainSummary(cfg.arm.arm, run_dir, st.branch_step, cfg.arm.steps, dict(st.checkpoints),
                        dict(st.val_scores), time.perf_counter() - t0,
                        time.process_time() - cpu0, tracker.run_id)


def _loop(st: _State, cfg: TrainConfig, env: EnvConfig, run_dir: Path, tracker: NullTracker,
          on_step: Callable[[int, int, dict[str, float]], None] | None = None) -> None:
    """Own steps 0..N; metrics go to MLflow at combined steps so a continuation's curves extend
    its parent's."""
    recipe, arm = cfg.recipe, cfg.arm
    maker, spec = ScenarioMaker(cfg.data.dirichlet_alpha), f"policy:{run_dir.as_posix()}"
    val_items, per_step = validation_items(cfg.data), recipe.scenarios_per_step
    peak, floor = recipe.learning_rate * arm.lr_multiple, recipe.lr_floor * arm.lr_multiple
    for step in range(arm.steps + 1):
        last, combined = step == arm.steps, st.branch_step + step
        if step % recipe.validation_every == 0 or last:
            st.val_scores[step] = _validate(st, val_items, maker, env, spec)
            tracker.log_step(combined, {"validation/score": st.val_scores[step]})
        fresh_start = step == 0 and st.parent_dir is None  # a continuation's step 0 is its parent
        if fresh_start or (step > 0 and (step % recipe.checkpoint_every == 0 or last)):
            _save(st, cfg, run_dir, step, tracker)
            tracker.flush()
        if last:
            break
        lr = lr_at(step, peak=peak, floor=floor, warmup_steps=recipe.warmup_steps,
                   total_steps=arm.steps)
        items = training_items(cfg.data, arm.seed, st.consumed, per_step)
        st.consumed += per_step
        seeds = st.rng.integers(0, 2**31 - 1, size=(per_step, recipe.group_size))
        ro = play(st.policy, spec, _jobs(items, seeds, maker), env)
        adv = loo_advantages(ro.rewards.reshape(per_step, recipe.group_size)).reshape(-1)
        metrics = {**_episode_stats(ro), **_grpo_update(st, ro, adv, cfg, lr)}
        st.curves.append({"step": step + 1, "combined_step": combined + 1, **metrics})
        tracker.log_step(combined + 1, metrics)
        if on_step is not None:
            on_step(step + 1, arm.steps, metrics)
