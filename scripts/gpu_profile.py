"""The lm study's GPU profile on one GPU, without DVC: bases, GRPO arms, evaluation, throughput.

    python scripts/gpu_profile.py run --results outputs/lm [--sizes lm_m lm_l] [--steps N]
    python scripts/gpu_profile.py summary --results outputs/lm

``run`` builds the tokenizer and each GPU-profile size's warm-started base (``negotiation.lm``),
trains the size's trained arms of ``protocol/lm/arms.yaml`` with the token-level trainer under the
protocol's ``gpu_training`` recipe (bf16 weights per its optimizer precision with float32 master
weights, gradient checkpointing; rollouts by the fixed-shape CUDA-graph generator),
evaluates every base and trained arm of those sizes with the harness (``hf:<dir>?device=cuda``)
into ``<results>/evaluate/<arm>/`` and writes ``<results>/gpu_profile.json`` (steps/s, generated
tokens/s, model FLOP utilisation, peak memory per run). ``--steps`` caps every run's optimizer
steps below the protocol's (a short profile; recorded in ``gpu_profile.json`` and to be logged as
a deviation). Back on the CPU machine the DVC pipeline's validate, analyze and report stages
read those tables like any other arm's. ``summary`` prints ``gpu_profile.json``.

Model FLOP utilisation counts ``2 N`` per generated and per reference-forward token and
``6 N`` per trained token against the H200's 790 TFLOP/s of dense bf16 (the figure measured in
the project's GPU notes), N the parameter count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

PEAK_FLOPS = 790e12
START = time.perf_counter()


def _log(msg: str) -> None:
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", flush=True)


def _over(budget: float | None, what: str) -> bool:
    """Whether the call's time budget is spent (then ``what`` is skipped and says so)."""
    if budget is not None and time.perf_counter() - START > budget:
        _log(f"time budget of {budget:.0f}s spent: skipping {what}")
        return True
    return False


def _arms_of(study, sizes):
    return {name: arm for name, arm in study.arms.items() if arm.size in sizes}


def _build_bases(study, sizes, results: Path, device: str, warm_steps: int | None) -> dict:
    from negotiation.lm import write_base, write_tokenizer

    tok = results / "tokenizer"
    if not (tok / "tokenizer.json").is_file():
        write_tokenizer(study.protocol, tok)
    records = {}
    for size in sizes:
        folder = results / "init" / size
        if not (folder / "config.json").is_file():
            start = time.perf_counter()
            records[size] = write_base(study.protocol, size, tok, folder, log=_log, device=device,
                                       steps=warm_steps)
            records[size]["seconds"] = time.perf_counter() - start
    return records


def _train(study, arms, results: Path, steps_cap: int | None, budget: float | None, device: str) -> dict:
    import pandas as pd
    import torch

    from negotiation.study import protocol_hash
    from negotiation.training import final_checkpoint
    from negotiation.training.lm import LmRuntime, lm_train_config_for, train_lm_arm

    runs: dict[str, object] = {}
    for arm in arms.values():
        if arm.kind == "trained":
            if arm.parent_run:
                runs.setdefault(arm.parent_run, arm)
            runs.setdefault(arm.run, arm)
    order = sorted(runs, key=lambda r: (runs[r].run == r and runs[r].parent_run is not None, r))
    out = {}
    for run in order:
        arm = runs[run]
        if (results / "train" / run / "curves.csv").is_file():
            continue  # trained already (by an earlier arm of the same run)
        if _over(budget, f"training run {run}"):
            break
        parent = final_checkpoint(results / "train" / arm.parent_run) if run == arm.run and arm.parent_run else None
        precision = study.protocol.recipe_for(arm.size).optimizer.precision
        runtime = LmRuntime(device=device, dtype="bfloat16" if precision == "bf16" else "float32",
                            gradient_checkpointing=device != "cpu", micro_batch_tokens=65536)
        cfg = lm_train_config_for(study, run, arm, base=results / "init" / arm.size, parent=parent, runtime=runtime,
                                  protocol_hash=protocol_hash(study.name))
        if steps_cap is not None and cfg.arm.steps > steps_cap:
            cfg = cfg.model_copy(update={"arm": cfg.arm.model_copy(update={"steps": steps_cap})})
        if device != "cpu":
            torch.cuda.reset_peak_memory_stats()
        _log(f"train {run}: {cfg.arm.steps} steps, size {arm.size}, lr x{arm.lr_multiple}")
        summary = train_lm_arm(cfg, results / "train" / run, track=False)
        timing = pd.read_csv(results / "train" / run / "timing.csv")
        out[run] = _throughput(timing, summary.seconds, cfg.arm.steps)
        _log(f"train {run}: {json.dumps(out[run])}")
    return out


def _throughput(timing, seconds: float, steps: int) -> dict:
    n = float(timing["parameters"].iloc[0])
    step_s = timing["generation_seconds"] + timing["training_seconds"]
    flops = 2 * n * (timing["generated_tokens"] + timing["sequence_tokens"]) + 6 * n * timing["sequence_tokens"]
    return {"parameters": int(n), "steps": steps, "run_seconds": round(seconds, 1),
            "steps_per_second": round(float(len(step_s) / step_s.sum()), 4),
            "generated_tokens_per_second": round(float(timing["generated_tokens"].sum() / timing["generation_seconds"].sum()), 1),
            "trained_tokens_per_second": round(float(timing["sequence_tokens"].sum() / timing["training_seconds"].sum()), 1),
            "mfu": round(float(flops.sum() / step_s.sum() / PEAK_FLOPS), 5),
            "peak_memory_gb": round(float(timing["peak_memory_gb"].max()), 2) if "peak_memory_gb" in timing else None}


def _evaluate(study, arms, results: Path, budget: float | None, device: str, concurrency: int) -> dict:
    from negotiation.evaluation import RunOptions, build_cell, evaluate_cell
    from negotiation.study import protocol_hash
    from negotiation.registry import select_checkpoint

    scores = {}
    for name, arm in sorted(arms.items()):
        if arm.kind == "base":
            folder = results / "init" / arm.size
        elif arm.kind == "trained":
            parent = results / "train" / arm.parent_run if arm.parent_run else None
            if not (results / "train" / arm.run).is_dir():
                continue
            folder = Path(select_checkpoint(study, name, results / "train" / arm.run, arm=arm,
                                            parent_run_dir=parent).checkpoint)
        else:
            continue
        if _over(budget, f"evaluating {name}"):
            break
        seller = f"hf:{folder.resolve()}?device={device}"
        cell = build_cell(study.protocol, arm=name, seller=seller)
        start = time.perf_counter()
        result = asyncio.run(evaluate_cell(cell, results / "evaluate" / name, study.protocol,
                                           protocol_hash=protocol_hash(study.name),
                                           # every episode in flight: the hf: seller batches their turns
                                           options=RunOptions(concurrency=concurrency, pilot=False),
                                           seller_sampling="self_served_seller"))
        eps = result.episodes
        ok = eps[eps["outcome"] != "error"]
        scores[name] = {"checkpoint": str(folder.relative_to(results)), "mean_S": round(float(ok["S"].mean()), 4),
                        "episodes": int(len(ok)), "error_rows": int(len(eps) - len(ok)),
                        "deal_rate": round(float(ok["deal"].mean()), 4),
                        "seconds": round(time.perf_counter() - start, 1)}
        _log(f"evaluate {name}: {scores[name]}")
    return scores


def run(args) -> None:
    import torch

    from negotiation.study import load_study

    torch.backends.cuda.matmul.allow_tf32 = True
    study = load_study("lm")
    sizes = args.sizes or sorted(k for k, v in study.protocol.sizes.items() if getattr(v, "profile", "") == "gpu")
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    device = args.device
    name = torch.cuda.get_device_name(0) if device != "cpu" else "cpu"
    import transformers

    record: dict = {"sizes": sizes, "steps_cap": args.steps, "device": name, "torch": torch.__version__,
                    "transformers": transformers.__version__}
    out = results / "gpu_profile.json"

    def save() -> None:
        out.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")

    record["bases"] = _build_bases(study, sizes, results, device, args.warm_steps)
    save()
    arms = _arms_of(study, sizes)
    record["training"], record["evaluation"] = {}, {}
    bases = {n: a for n, a in arms.items() if a.kind == "base"}
    record["evaluation"].update(_evaluate(study, bases, results, args.budget, device, args.concurrency))
    save()
    # Shared-LR arms first (the primary contrasts), then the 3x arms; each evaluated right after
    # its run so a spent budget leaves whole contrasts behind.
    for name, arm in sorted(((n, a) for n, a in arms.items() if a.kind == "trained"),
                            key=lambda kv: (kv[1].lr_multiple, kv[0])):
        record["training"].update(_train(study, {name: arm}, results, args.steps, args.train_budget, device))
        save()
        record["evaluation"].update(_evaluate(study, {name: arm}, results, args.budget, device, args.concurrency))
        record["seconds"] = round(time.perf_counter() - START, 1)
        save()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--results", default="outputs/lm")
    r.add_argument("--sizes", nargs="*")
    r.add_argument("--steps", type=int, default=None)
    r.add_argument("--warm-steps", type=int, default=None, help="warm-start steps (default: the protocol's)")
    r.add_argument("--device", default="cuda", help="cuda (the GPU profile) or cpu (a dry run)")
    r.add_argument("--train-budget", type=float, default=None, help="seconds after which no run starts")
    r.add_argument("--budget", type=float, default=None, help="seconds after which no evaluation starts")
    r.add_argument("--concurrency", type=int, default=36, help="evaluation episodes in flight (their seller "
                   "turns are generated as one batch)")
    s = sub.add_parser("summary")
    s.add_argument("--results", default="outputs/lm")
    args = p.parse_args()
    if args.command == "run":
        run(args)
    else:
        print((Path(args.results) / "gpu_profile.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
