"""The demo GRPO trainer on the CPU, top to bottom (CleanRL style).

One call of ``train_arm`` trains one arm:

1. Seeding block: the size's ``init_seed`` fixes the initial weights (``Policy.init``); the
   run's ``seed`` fixes torch's global stream, the data order (``training_items``) and the
   rollouts' sample seeds (one ``numpy.random.Generator``); torch runs single-threaded, so the
   same seeds give bit-identical checkpoints and curves.
2. Start: the size's base (``init@``'s output, else the untrained init) written as ``step_0/``
   (the chain's base), or a parent ``step_N/``
   whose chain base stays the KL reference (a continuation never re-bases the KL).
3. Each step: ``scenarios_per_step`` x ``group_size`` rollouts played in lockstep through the
   engine; Eq. 1 rewards
   (training-phase ACCEPT flag from the ``EnvConfig``); leave-one-out normalized advantages
   per group; one AdamW step on the token-level PPO-clipped loss plus ``kl_coef`` x k3 KL to
   the base; the learning rate from a warmup-cosine schedule that restarts in a continuation.
4. Validation (mean S on the fixed validation set) at the first step and every
   ``validation_every`` steps; ``step_N/`` every ``checkpoint_every`` steps and at the end;
   curves to ``curves.csv`` / ``validation.csv`` and MLflow.

Seeding, start, the step schedule and the run's files are the same for the token-level trainer
and live in ``negotiation.training._run`` (``TrainingRun``, ``schedule``); the loop is here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from negotiation.agents import Policy, PolicyShards, feature_tensors, token_logprobs_entropy, token_mask
from negotiation.env import EnvConfig
from negotiation.errors import ConfigError
from negotiation.training._config import TrainConfig
from negotiation.training._data import ScenarioMaker, TrainItem, training_items, validation_items
from negotiation.training._grpo import MAX_GRAD_NORM, clipped_surrogate, group_advantages, k3_kl, masked_mean
from negotiation.training._rollout import Rollouts, play
from negotiation.training._run import (
    CURVES_FILE, VALIDATION_FILE, RunLedger, TrainingRun, TrainSummary, record_update, record_validation, run_tracker,
    save_step, schedule,
)
from negotiation.tracking import RECORD_FILE, NullTracker

__all__ = ["CURVES_FILE", "VALIDATION_FILE", "TrainSummary", "train_arm"]


@dataclass
class _State:
    ledger: RunLedger
    policy: Policy
    base: torch.nn.Module
    """The chain's base policy: the KL reference."""
    optimizer: torch.optim.AdamW
    """A fresh optimizer every run: a continuation never loads optimizer state."""


def _setup(cfg: TrainConfig, ledger: RunLedger) -> _State:
    arm, recipe = cfg.arm, cfg.recipe
    if arm.parent is None:
        policy = Policy.init(arm.arch, arm.init_seed) if arm.base is None else _load_base(arm)
        base = copy.deepcopy(policy.net)
    else:
        policy, base = Policy.load(arm.parent), Policy.load(ledger.base_dir).net
    base.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.net.parameters(), lr=recipe.learning_rate * arm.lr_multiple,
                                  betas=recipe.optimizer.betas, weight_decay=recipe.optimizer.weight_decay)
    return _State(ledger, policy, base, optimizer)


def _load_base(arm: Any) -> Policy:
    policy = Policy.load(arm.base)
    if policy.arch != arm.arch:
        raise ConfigError(f"{arm.base}/config.json: the base has architecture {policy.arch.model_dump()}, "
                          f"run {arm.arm!r} trains {arm.arch.model_dump()}")
    return policy


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
    outs = ro.outcomes
    return {"train/reward": float(ro.rewards.mean()), "train/score": float(ro.scores.mean()),
            "train/deal_rate": float(np.mean([o.deal for o in outs])),
            "train/mean_rounds": float(np.mean([o.n_rounds for o in outs])),
            "train/bad_turn_rate": float(sum(o.seller_bad_turns for o in outs)
                                         / max(1, sum(o.seller_turns for o in outs)))}


def _validate(st: _State, items: list[TrainItem], maker: ScenarioMaker, env: EnvConfig,
              spec: str, shards: PolicyShards) -> float:
    # Sample seed = scenario seed: the policy samples exactly as it will in evaluation.
    jobs = [(maker.scenario(it), maker.buyer(it), it.seed) for it in items]
    return float(play(st.policy, spec, jobs, env, shards).scores.mean())


def _tracker(cfg: TrainConfig, env: EnvConfig, track: bool, parent_run: str | None,
             record_to: Path | None) -> NullTracker:
    params = {"recipe": cfg.recipe.model_dump(mode="json"), "data": cfg.data.model_dump(mode="json"),
              "arm": cfg.arm.model_dump(mode="json"), "env": vars(env)}
    return run_tracker(cfg.arm, track=track, parent_run=parent_run, protocol_hash=cfg.protocol_hash,
                       size=cfg.arm.arch.width, params=params, record_to=record_to)


def train_arm(cfg: TrainConfig, env: EnvConfig, run_dir: str | Path, *, track: bool = True, record: bool = False,
              threads: int = 1, processes: int = 1,
              on_step: Callable[[int, int, dict[str, float]], None] | None = None) -> TrainSummary:
    """Train one arm; write ``run_dir`` (``step_N/`` folders, ``curves.csv``, ``validation.csv``).

    Args:
        cfg: recipe, data and arm (numbers from the study protocol).
        env: environment constants; training uses the training-phase ACCEPT flag.
        run_dir: output folder of the arm; created if missing.
        track: log the run to MLflow (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
        record: with ``track``, record the MLflow run to ``run_dir/mlflow_run.json`` (``RECORD_FILE``) instead of
            logging it now (the ``track`` stage logs it; this process never imports MLflow).
        threads: torch CPU threads while training (restored after); 1 is fastest for these
            small networks and keeps results identical across runs.
        processes: processes the rollouts' per-episode work runs in (``PolicyShards``: this one
            plus ``processes - 1`` torch-free helpers); the same bytes with any number.
        on_step: ``(own step done, own steps, metrics)`` after each optimizer step (progress).
    """
    run_dir, recipe, arm = Path(run_dir), cfg.recipe, cfg.arm
    record_to = run_dir / RECORD_FILE if record else None
    # The helpers start first: their imports overlap this process's setup.
    with PolicyShards(processes) as shards, TrainingRun(arm, run_dir, threads=threads, tracker=lambda parent_run: _tracker(
            cfg, env, track, parent_run, record_to)) as run:
        ledger, tracker = run.ledger, run.tracker
        st = _setup(cfg, ledger)
        maker, spec = ScenarioMaker(cfg.data.dirichlet_alpha), f"policy:{run_dir.as_posix()}"
        val_items, per_step = validation_items(cfg.data), recipe.scenarios_per_step
        for point in schedule(ledger, arm, recipe):
            if point.validate:
                record_validation(ledger, tracker, point, _validate(st, val_items, maker, env, spec, shards))
            if point.save:
                save_step(ledger, arm, run_dir, point.step, st.policy, tracker)
                tracker.flush()
            if point.lr is None:
                break
            # one GRPO step: scenarios_per_step x group_size rollouts in lockstep, then one update
            items = training_items(cfg.data, arm.seed, ledger.consumed, per_step)
            ledger.consumed += per_step
            seeds = ledger.rng.integers(0, 2**31 - 1, size=(per_step, recipe.group_size))
            ro = play(st.policy, spec, _jobs(items, seeds, maker), env, shards)
            adv = group_advantages(ro.rewards.reshape(per_step, recipe.group_size), baseline=recipe.baseline,
                                   normalize=recipe.normalize_rewards).reshape(-1)
            metrics = {**_episode_stats(ro), **_grpo_update(st, ro, adv, cfg, point.lr)}
            record_update(ledger, tracker, point, metrics)
            if on_step is not None:
                on_step(point.step + 1, arm.steps, metrics)
    return run.summary()
