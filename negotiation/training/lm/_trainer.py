"""Token-level multi-turn GRPO for a causal LM seller, top to bottom.

One call of ``train_lm_arm`` trains one run with the protocol's recipe (paper §3, Appendix H):

1. Seeding block: the run's ``seed`` fixes torch's global stream, the data order
   (``training_scenarios``) and one ``numpy`` Generator that draws each rollout's sample seed;
   on the CPU with a fixed thread count the same seed gives identical curves and checkpoints.
2. Start: the size's base checkpoint, written as ``step_0/`` (the chain's base and KL reference),
   or a parent ``step_N/`` whose chain base stays the reference (a continuation never re-bases).
   The turn tags come from the tokenizer's chat template (``derive_turn_tags``, round-trip checked).
3. Each step: ``scenarios_per_step`` scenarios × ``group_size`` rollouts against the training
   buyers attached to the scenarios, sampled with the protocol's seller sampling; the summed
   front-loaded rewards (Eq. 1) give leave-one-out normalized advantages per group; every
   generated seller token of an episode carries its advantage; one AdamW step on the token-mean
   clipped surrogate plus ``kl.coefficient`` × k3 KL to the base (``grpo_token_step``), at the
   warmup-cosine rate of the step (restarted by a continuation), gradients clipped.
4. Validation (mean S over the fixed validation set, sample seed = scenario seed) at step 0 and
   every ``validation_every`` steps; ``step_N/`` in Hugging Face format every
   ``checkpoint_every`` steps and at the end; curves to ``curves.csv``, ``validation.csv`` and
   MLflow; wall-clock figures to ``timing.csv`` (never to the curves, which must repeat exactly).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from negotiation.training._checkpoint import (
    TrainingInfo, read_training_info, relative_to_folder, resolve_from, step_dir, write_checkpoint,
)
from negotiation.training._grpo import MAX_GRAD_NORM, loo_advantages, lr_at
# One summary record for both trainers (the select@ stage and MLflow read the same fields).
from negotiation.training._trainer import TrainSummary
from negotiation.training.lm._config import LmTrainConfig
from negotiation.training.lm._loss import TokenBatch, grpo_token_step
from negotiation.training.lm._rollout import Generate, TokenEpisodes, play_token_episodes
from negotiation.training.lm._seller import GeneratorFactory, HfSeller, load_seller
from negotiation.training.nemo import (
    NegotiationStepLogic, NemoEnvSettings, training_scenarios, validation_scenarios,
)
from negotiation.tracking import MlflowTracker, NullTracker, experiment_name, flatten, git_commit

__all__ = ["CURVES_FILE", "TIMING_FILE", "VALIDATION_FILE", "train_lm_arm"]

CURVES_FILE, VALIDATION_FILE, TIMING_FILE = "curves.csv", "validation.csv", "timing.csv"


@dataclass
class _State:
    seller: HfSeller
    reference: torch.nn.Module
    base_dir: Path
    optimizer: torch.optim.Optimizer
    rng: np.random.Generator
    settings: NemoEnvSettings
    generate: Generate
    branch_step: int
    consumed: int
    parent_dir: Path | None
    curves: list[dict[str, float]] = field(default_factory=list)
    timing: list[dict[str, float]] = field(default_factory=list)
    val_scores: dict[int, float] = field(default_factory=dict)
    checkpoints: dict[int, str] = field(default_factory=dict)


def _start(cfg: LmTrainConfig, run_dir: Path, factory: GeneratorFactory | None) -> _State:
    arm, t = cfg.arm, cfg.run_protocol.training
    torch.manual_seed(arm.seed)
    if arm.parent is None:
        start, base_dir, branch, consumed = arm.base, step_dir(run_dir, 0), 0, 0
        reference_dir = arm.base
    else:
        info = read_training_info(arm.parent)
        start, base_dir = arm.parent, resolve_from(arm.parent, info.base_checkpoint)
        branch, consumed, reference_dir = info.combined_step, info.consumed_scenarios, base_dir
    seller, settings, generate = load_seller(start, cfg, factory)
    reference = load_seller(reference_dir, cfg, None, reference=True)[0].model
    optimizer = torch.optim.AdamW(seller.model.parameters(), lr=t.learning_rate * arm.lr_multiple,
                                  betas=t.optimizer.betas, weight_decay=t.optimizer.weight_decay)
    rng = np.random.default_rng(np.random.SeedSequence([arm.seed, branch]))
    return _State(seller, reference, base_dir, optimizer, rng, settings, generate, branch, consumed, arm.parent)


def _play(st: _State, cfg: LmTrainConfig, states: list, seeds: list[int]) -> TokenEpisodes:
    seq = cfg.run_protocol.training.sequences
    assert seq is not None  # LmTrainConfig refuses a recipe without token caps
    st.seller.model.eval()
    with torch.no_grad(), NegotiationStepLogic(st.settings) as logic:
        return play_token_episodes(states, seeds, tokenizer=st.seller.tokenizer, generate=st.generate,
                                   settings=st.settings, prompt_tokens=seq.prompt_tokens,
                                   context_tokens=seq.context_tokens, new_tokens=seq.new_tokens_per_turn,
                                   rollout_turns=cfg.run_protocol.training.rollout_turns,
                                   stop_ids=st.seller.stop_ids, logic=logic)


def _episode_stats(ep: TokenEpisodes) -> dict[str, float]:
    done = [e for e in ep.episodes if e is not None]
    bad, turns = ep.seller_turn_counts()
    return {"train/reward": float(ep.returns.mean()), "train/score": float(ep.scores.mean()),
            "train/deal_rate": float(np.mean([e is not None and e.deal for e in ep.episodes])),
            "train/mean_rounds": float(np.mean([e.n_rounds for e in done])) if done else float("nan"),
            "train/bad_parse_rate": bad / max(1, turns),
            "train/mean_gen_tokens": float(ep.gen_tokens.mean()),
            "train/truncated_rate": float(ep.truncated.mean())}


def _update(st: _State, cfg: LmTrainConfig, ep: TokenEpisodes, lr: float) -> dict[str, float]:
    t = cfg.run_protocol.training
    adv = loo_advantages(ep.returns.reshape(t.scenarios_per_step, t.group_size)).reshape(-1)
    keep = [i for i in range(len(ep.ids)) if ep.trainable[i]]
    batch = TokenBatch([ep.ids[i] for i in keep], [ep.gen_mask[i] for i in keep], [float(adv[i]) for i in keep])
    st.seller.model.train()
    return grpo_token_step(st.seller.model, st.reference, st.optimizer, batch, lr=lr, clip_low=t.clip.low,
                           clip_high=t.clip.high, kl_coef=t.kl.coefficient, max_grad_norm=MAX_GRAD_NORM,
                           token_budget=cfg.runtime.micro_batch_tokens, pad_id=st.seller.pad_id)


def _validate(st: _State, cfg: LmTrainConfig) -> float:
    states = validation_scenarios(cfg.run_protocol)
    # Sample seed = scenario seed: the seller samples as it will in evaluation.
    return float(_play(st, cfg, states, [s.seed for s in states]).scores.mean())


def _save(st: _State, cfg: LmTrainConfig, run_dir: Path, step: int, tracker: NullTracker) -> None:
    folder = step_dir(run_dir, step)
    parent = relative_to_folder(st.parent_dir, folder) if st.parent_dir is not None else None
    info = TrainingInfo(step=step, combined_step=st.branch_step + step, branch_step=st.branch_step,
                        arm=cfg.arm.arm, seed=cfg.arm.seed, lr_multiple=cfg.arm.lr_multiple,
                        consumed_scenarios=st.consumed, base_checkpoint=relative_to_folder(st.base_dir, folder),
                        parent_checkpoint=parent, val_score=st.val_scores.get(step), mlflow_run_id=tracker.run_id)
    write_checkpoint(folder, st.seller, info)  # type: ignore[arg-type]  # any object with save(folder)
    st.checkpoints[step] = folder.as_posix()


def _tracker(cfg: LmTrainConfig, track: bool, parent_run: str | None) -> NullTracker:
    if not track:
        return NullTracker()
    arm = cfg.arm
    params = flatten({"recipe": cfg.run_protocol.training.model_dump(mode="json"), "arm": arm.model_dump(mode="json"),
                      "runtime": cfg.runtime.model_dump(mode="json"),
                      "sampling": cfg.run_protocol.sampling.self_served_seller.model_dump(mode="json")})
    tags = {"study": arm.study, "arm": arm.arm, "size": arm.size, "lr_multiple": arm.lr_multiple,
            "parent_run": parent_run or "", "parent_arm": arm.parent_arm or "", "backend": "token",
            "protocol_hash": cfg.protocol_hash, "git_commit": git_commit(), "phase": "training"}
    return MlflowTracker(experiment_name(arm.study), arm.arm, params, tags)


def _write_tables(st: _State, run_dir: Path) -> None:
    pd.DataFrame(st.curves).to_csv(run_dir / CURVES_FILE, index=False)
    pd.DataFrame(st.timing).to_csv(run_dir / TIMING_FILE, index=False)
    pd.DataFrame({"step": list(st.val_scores), "combined_step": [st.branch_step + s for s in st.val_scores],
                  "validation/score": list(st.val_scores.values())}).to_csv(run_dir / VALIDATION_FILE, index=False)


def train_lm_arm(cfg: LmTrainConfig, run_dir: str | Path, *, track: bool = True,
                 generator_factory: GeneratorFactory | None = None) -> TrainSummary:
    """Train one run; write ``run_dir`` (``step_N/`` Hugging Face folders, curves, timing).

    Args:
        cfg: protocol, run and machine settings.
        run_dir: output folder of the run; created if missing.
        track: log the run to MLflow (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
        generator_factory: builds the batched sampler from the loaded seller; default the
            KV-cache generator of ``negotiation.lm``.
    """
    t0, cpu0, run_dir = time.perf_counter(), time.process_time(), Path(run_dir)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.runtime.threads)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        st = _start(cfg, run_dir, generator_factory)
        parent_run = read_training_info(cfg.arm.parent).mlflow_run_id if cfg.arm.parent else None
        tracker = _tracker(cfg, track, parent_run)
        try:
            _loop(st, cfg, run_dir, tracker)
        except BaseException:
            tracker.finish("FAILED")
            raise
        tracker.set_tags({"checkpoints": " ".join(st.checkpoints[s] for s in sorted(st.checkpoints))})
        tracker.finish()
    finally:
        torch.set_num_threads(old_threads)
    _write_tables(st, run_dir)
    return TrainSummary(cfg.arm.arm, run_dir, st.branch_step, cfg.arm.steps, dict(st.checkpoints),
                        dict(st.val_scores), time.perf_counter() - t0, time.process_time() - cpu0,
                        tracker.run_id)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def _loop(st: _State, cfg: LmTrainConfig, run_dir: Path, tracker: NullTracker) -> None:
    """Own steps 0..N; metrics go to MLflow at combined steps so a continuation extends its parent."""
    t, arm = cfg.run_protocol.training, cfg.arm
    peak, floor = t.learning_rate * arm.lr_multiple, t.lr_floor * arm.lr_multiple
    for step in range(arm.steps + 1):
        last, combined = step == arm.steps, st.branch_step + step
        if (step == 0 and t.validate_at_step_zero) or (step > 0 and step % t.validation_every == 0) or last:
            st.val_scores[step] = _validate(st, cfg)
            tracker.log_step(combined, {"validation/score": st.val_scores[step]})
        fresh_start = step == 0 and st.parent_dir is None  # a continuation's step 0 is its parent
        if fresh_start or (step > 0 and (step % t.checkpoint_every == 0 or last)):
            _save(st, cfg, run_dir, step, tracker)
            tracker.flush()
            _write_tables(st, run_dir)  # a run cut short keeps its curves up to its last checkpoint
        if last:
            break
        lr = lr_at(step, peak=peak, floor=floor, warmup_steps=t.warmup_steps, total_steps=arm.steps)
        states = training_scenarios(cfg.run_protocol, offset=st.consumed, count=t.scenarios_per_step, seed=arm.seed)
        st.consumed += t.scenarios_per_step
        seeds = st.rng.integers(0, 2**31 - 1, size=(t.scenarios_per_step, t.group_size))
        group = [s for s in states for _ in range(t.group_size)]
        ep, gen_s = _timed(lambda: _play(st, cfg, group, [int(x) for x in seeds.reshape(-1)]))
        update, train_s = _timed(lambda: _update(st, cfg, ep, lr))
        metrics = {**_episode_stats(ep), **update}
        st.curves.append({"step": step + 1, "combined_step": combined + 1, **metrics})
        st.timing.append(_timing_row(st, step + 1, ep, gen_s, train_s))
        tracker.log_step(combined + 1, {**metrics, **{f"timing/{k}": v for k, v in st.timing[-1].items()
                                                     if k != "step"}})


def _timing_row(st: _State, step: int, ep: TokenEpisodes, gen_s: float, train_s: float) -> dict[str, float]:
    row = {"step": step, "generation_seconds": gen_s, "training_seconds": train_s,
           "generated_tokens": float(ep.gen_tokens.sum()),
           "sequence_tokens": float(sum(len(r) for r in ep.ids)),
           "generated_tokens_per_second": float(ep.gen_tokens.sum()) / max(gen_s, 1e-9),
           "parameters": float(st.seller.n_params)}
    if torch.cuda.is_available():
        row["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
    return row
