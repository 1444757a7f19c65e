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
   Beside the loss, the curves say how much of the step carried signal (``group_signal``: reward
   spread within groups, advantage quantiles) and, when the sampler reports log-probs, how far they
   are from the trainer's (``train/logprob_gap_*``).
5. Resume: every checkpoint save also writes ``resume.pt`` (``_resume``); ``resume=True`` continues
   an interrupted run exactly from its last checkpoint (a partial run is never overwritten).

Seeding, start, the step schedule and the run's files are the demo trainer's
(``negotiation.training._run``); this module holds what is the language model's own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from negotiation.training._grpo import MAX_GRAD_NORM, group_advantages
from negotiation.training._checkpoint import step_dir
from negotiation.training._run import (
    CURVES_FILE, VALIDATION_FILE, RunLedger, StepPoint, TrainingRun, TrainSummary, record_update, record_validation,
    run_tracker, save_step, schedule, write_curves,
)
from negotiation.training.lm._config import LmTrainConfig
from negotiation.training.lm._diagnostics import group_signal
from negotiation.training.lm._loss import TokenBatch, grpo_token_step
from negotiation.training.lm._memory import enable_checkpointing, needs_checkpointing
from negotiation.training.lm._precision import MasterAdamW
from negotiation.training.lm._resume import RESUME_FILE, ResumeRecord, ResumeState, check_run_folder, write_resume
from negotiation.training.lm._rollout import EpisodeEngine, Generate, TokenEpisodes, play_token_episodes
from negotiation.training.lm._slot_rollout import SlotRollout
from negotiation.training.lm._seller import GeneratorFactory, HfSeller, load_seller
from negotiation.training.nemo import (
    NegotiationStepLogic, NemoEnvSettings, training_scenarios, validation_scenarios,
)
from negotiation.tracking import RECORD_FILE, NullTracker

__all__ = ["CURVES_FILE", "TIMING_FILE", "VALIDATION_FILE", "train_lm_arm"]

TIMING_FILE = "timing.csv"


@dataclass
class _State:
    ledger: RunLedger
    seller: HfSeller
    reference: torch.nn.Module
    optimizer: MasterAdamW
    settings: NemoEnvSettings
    generate: Generate | EpisodeEngine
    checkpointing: bool
    """Whether the update recomputes activations (the runtime's choice, or the probe's)."""
    timing: list[dict[str, float]] = field(default_factory=list)


def _start(cfg: LmTrainConfig, ledger: RunLedger, factory: GeneratorFactory | None, run_dir: Path,
           resumed: ResumeState | None) -> _State:
    arm, t = cfg.arm, cfg.run_protocol.training
    start, reference_dir = (arm.base, arm.base) if arm.parent is None else (arm.parent, ledger.base_dir)
    if resumed is not None:  # the run's own last checkpoint: its float32 masters, exactly
        start = step_dir(run_dir, resumed.record.step)
    seller, settings, generate = load_seller(start, cfg, factory)
    if cfg.reward != settings.reward:  # the ladder's tasks may train on another reward
        settings = settings.model_copy(update={"reward": cfg.reward})
    reference = load_seller(reference_dir, cfg, None, reference=True)[0].model
    # float32 master weights whatever the model's dtype: bf16 weights alone round 1e-4 updates away
    optimizer = MasterAdamW(seller.model.parameters(), lr=t.learning_rate * arm.lr_multiple,
                            betas=t.optimizer.betas, weight_decay=t.optimizer.weight_decay, start=seller.masters)
    seller.masters = optimizer.master  # checkpoints hold the float32 masters
    st = _State(ledger, seller, reference, optimizer, settings, generate, _checkpointing(cfg, seller, reference))
    if resumed is not None:
        _restore(st, resumed)
    return st


def _checkpointing(cfg: LmTrainConfig, seller: HfSeller, reference: torch.nn.Module) -> bool:
    """Whether the update recomputes activations: the runtime's setting, or (None) the probe's
    answer with the policy, the reference and the rollout engine loaded (it then turns it on)."""
    if cfg.runtime.gradient_checkpointing is not None:
        return cfg.runtime.gradient_checkpointing  # applied when the policy was loaded
    seq = cfg.run_protocol.training.sequences
    assert seq is not None  # LmTrainConfig refuses a recipe without token caps
    needed = needs_checkpointing(seller.model, reference, micro_batch_tokens=cfg.runtime.micro_batch_tokens,
                                 context_tokens=seq.context_tokens, pad_id=seller.pad_id)
    if needed:
        enable_checkpointing(seller.model)
    return needed


def _restore(st: _State, resumed: ResumeState) -> None:
    """Put back what the run had at its last checkpoint besides the weights."""
    rec, ledger = resumed.record, st.ledger
    ledger.consumed, ledger.rng.bit_generator.state = rec.consumed, rec.rng_state
    ledger.curves, ledger.val_scores = [dict(r) for r in rec.curves], dict(rec.val_scores)
    ledger.checkpoints, st.timing = dict(rec.checkpoints), [dict(r) for r in rec.timing]
    st.optimizer.load_state_dict(resumed.optimizer)
    torch.set_rng_state(resumed.torch_rng)
    if resumed.cuda_rng is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(resumed.cuda_rng)


def _resume_state(st: _State, cfg: LmTrainConfig, step: int) -> ResumeState:
    ledger = st.ledger
    record = ResumeRecord(step=step, consumed=ledger.consumed, rng_state=ledger.rng.bit_generator.state,
                          curves=ledger.curves, val_scores=ledger.val_scores, checkpoints=ledger.checkpoints,
                          timing=st.timing, config=cfg.model_dump(mode="json"))
    return ResumeState(record=record, optimizer=st.optimizer.state_dict(), torch_rng=torch.get_rng_state(),
                       cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)


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


def _sampler_logprobs(ep: TokenEpisodes, keep: list[int]) -> list[list[float]] | None:
    """The kept episodes' sampler log-probs (aligned with ``ids``), or None when the sampler reported
    none (a plain ``Generate``: NaN at every generated token), so no gap column is logged."""
    rows = [ep.gen_logprobs[i] for i in keep]
    reported = any(not math.isnan(v) for i, row in zip(keep, rows) for v, m in zip(row, ep.gen_mask[i]) if m)
    return rows if reported else None


def _update(st: _State, cfg: LmTrainConfig, ep: TokenEpisodes, lr: float) -> dict[str, float]:
    t = cfg.run_protocol.training
    returns = ep.returns.reshape(t.scenarios_per_step, t.group_size)
    adv = group_advantages(returns, baseline=t.baseline, normalize=t.normalize_rewards).reshape(-1)
    keep = [i for i in range(len(ep.ids)) if ep.trainable[i]]
    batch = TokenBatch([ep.ids[i] for i in keep], [ep.gen_mask[i] for i in keep], [float(adv[i]) for i in keep],
                       _sampler_logprobs(ep, keep))
    st.seller.model.train()
    metrics = grpo_token_step(st.seller.model, st.reference, st.optimizer, batch, lr=lr, clip_low=t.clip.low,
                              clip_high=t.clip.high, kl_coef=t.kl.coefficient, max_grad_norm=MAX_GRAD_NORM,
                              token_budget=cfg.runtime.micro_batch_tokens, pad_id=st.seller.pad_id)
    return {**metrics, **group_signal(returns, adv[keep])}


def _validate(st: _State, cfg: LmTrainConfig) -> float:
    states = validation_scenarios(cfg.run_protocol)
    # Sample seed = scenario seed: the seller samples as it will in evaluation.
    return float(_play(st, cfg, states, [s.seed for s in states]).scores.mean())


def _tracker(cfg: LmTrainConfig, track: bool, parent_run: str | None, record_to: Path | None = None) -> NullTracker:
    params = {"recipe": cfg.run_protocol.training.model_dump(mode="json"), "arm": cfg.arm.model_dump(mode="json"),
              "runtime": cfg.runtime.model_dump(mode="json"),
              "sampling": cfg.run_protocol.sampling.self_served_seller.model_dump(mode="json")}
    return run_tracker(cfg.arm, track=track, parent_run=parent_run, protocol_hash=cfg.protocol_hash,
                       size=cfg.arm.size, params=params, backend="token", record_to=record_to)


def _write_timing(st: _State, run_dir: Path) -> None:
    pd.DataFrame(st.timing).to_csv(run_dir / TIMING_FILE, index=False)


def train_lm_arm(cfg: LmTrainConfig, run_dir: str | Path, *, track: bool = True, record: bool = False,
                 generator_factory: GeneratorFactory | None = None, resume: bool = False) -> TrainSummary:
    """Train one run; write ``run_dir`` (``step_N/`` Hugging Face folders, curves, timing).

    Args:
        cfg: protocol, run and machine settings.
        run_dir: output folder of the run; created if missing.
        track: log the run to MLflow (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
        record: with ``track``, record the MLflow run to ``run_dir/mlflow_run.json`` (``RECORD_FILE``)
            instead of logging it (the ``track`` stage logs it; this process never imports MLflow, so
            the stage runs on a GPU machine without it).
        generator_factory: builds the batched sampler from the loaded seller; default the
            KV-cache generator of ``negotiation.lm``.
        resume: continue the partial run in ``run_dir`` from its ``resume.pt`` (its last
            checkpoint) exactly; without it a folder holding a partial run is refused
            (``check_run_folder``). With nothing saved yet the run starts fresh.
    """
    run_dir, t, arm = Path(run_dir), cfg.run_protocol.training, cfg.arm
    resumed = check_run_folder(run_dir, cfg, resume)
    record_to = run_dir / RECORD_FILE if record else None
    with TrainingRun(arm, run_dir, threads=cfg.runtime.threads,
                     tracker=lambda parent_run: _tracker(cfg, track, parent_run, record_to)) as run:
        ledger, tracker = run.ledger, run.tracker
        st = _start(cfg, ledger, generator_factory, run_dir, resumed)
        if resumed is not None:  # a new MLflow run: the steps before the checkpoint are logged again
            for step, score in ledger.val_scores.items():
                tracker.log_step(ledger.branch_step + step, {"validation/score": score})
            for row in ledger.curves:
                tracker.log_step(int(row["combined_step"]), {k: v for k, v in row.items() if k not in ("step", "combined_step")})
        for point in schedule(ledger, arm, t, resume_step=None if resumed is None else resumed.record.step):
            if point.validate:
                record_validation(ledger, tracker, point, _validate(st, cfg))
            if point.save:
                save_step(ledger, arm, run_dir, point.step, st.seller, tracker)
                write_curves(ledger, run_dir)  # a run cut short keeps its curves up to its last checkpoint
                _write_timing(st, run_dir)
                write_resume(run_dir, _resume_state(st, cfg, point.step))
                tracker.flush()
            if point.lr is None:
                break
            record_update(ledger, tracker, point, _grpo_step(st, cfg, tracker, point))
    _finish(st, run_dir)
    return run.summary()


def _finish(st: _State, run_dir: Path) -> None:
    """The run ended: its timing table; the resume state goes (a finished run has nothing to resume)."""
    _write_timing(st, run_dir)
    (run_dir / RESUME_FILE).unlink(missing_ok=True)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def _grpo_step(st: _State, cfg: LmTrainConfig, tracker: NullTracker, point: StepPoint) -> dict[str, float]:
    """One GRPO step: ``scenarios_per_step`` x ``group_size`` token episodes, then one token-level
    update on them at ``point.lr``; its metrics (the timing row goes to ``timing.csv`` and MLflow)."""
    t, arm, ledger = cfg.run_protocol.training, cfg.arm, st.ledger
    states = training_scenarios(cfg.run_protocol, offset=ledger.consumed, count=t.scenarios_per_step, seed=arm.seed)
    ledger.consumed += t.scenarios_per_step
    seeds = ledger.rng.integers(0, 2**31 - 1, size=(t.scenarios_per_step, t.group_size))
    group = [s for s in states for _ in range(t.group_size)]
    ep, gen_s = _timed(lambda: _play(st, cfg, group, [int(x) for x in seeds.reshape(-1)]))
    metrics, train_s = _timed(lambda: _update(st, cfg, ep, point.lr))
    st.timing.append(_timing_row(st, point.step + 1, ep, gen_s, train_s))
    tracker.log_step(point.combined + 1, {f"timing/{k}": v for k, v in st.timing[-1].items() if k != "step"})
    return {**_episode_stats(ep), **metrics}


def _timing_row(st: _State, step: int, ep: TokenEpisodes, gen_s: float, train_s: float) -> dict[str, float]:
    row = {"step": step, "generation_seconds": gen_s, "training_seconds": train_s,
           "generated_tokens": float(ep.gen_tokens.sum()),
           "sequence_tokens": float(sum(len(r) for r in ep.ids)),
           "generated_tokens_per_second": float(ep.gen_tokens.sum()) / max(gen_s, 1e-9),
           "parameters": float(st.seller.n_params), "gradient_checkpointing": float(st.checkpointing)}
    if isinstance(st.generate, SlotRollout):  # where the rollout's time went (docs/training.md, rollout engine)
        stats = st.generate.stats
        row.update(decode_steps=float(stats.decode_steps), live_share=stats.live_share, env_seconds=stats.env_seconds,
                   feed_seconds=stats.feed_seconds, device_wait_seconds=stats.wait_seconds)
    if torch.cuda.is_available():
        row["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
    return row
