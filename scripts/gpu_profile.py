"""The lm study's GPU profile on one GPU, without DVC: bases, GRPO arms, evaluation, throughput.

    python scripts/gpu_profile.py run --results outputs/lm [--sizes lm_m lm_l] [--arms lm_l_lr3x] [--steps N]
    python scripts/gpu_profile.py summary --results outputs/lm
    python scripts/gpu_profile.py analyze --results outputs/lm     # validate -> analyze -> report
    python scripts/gpu_profile.py track --results outputs/lm       # the returned curves into MLflow

``run`` builds the tokenizer and each GPU-profile size's warm-started base (``negotiation.ladder``),
trains the size's trained arms of ``protocol/lm/arms.yaml`` with the token-level trainer under the
protocol's ``gpu_training`` recipe (bf16 weights per its optimizer precision with float32 master
weights, gradient checkpointing; rollouts by the fixed-shape CUDA-graph generator),
evaluates every base and trained arm of those sizes with the harness (``hf:<dir>?device=cuda``)
into ``<results>/evaluate/<arm>/`` and writes ``<results>/gpu_profile.json`` (steps/s, generated
tokens/s, model FLOP utilisation, peak memory per run); the reference arms (scripted sellers) are
evaluated with the bases, so the folder holds a self-contained part of the study. ``analyze`` runs
validate, analyze and report over exactly those arms (the DVC stages read the arms their plan
builds, which leaves the GPU profile out). ``--steps`` caps every run's optimizer
steps below the protocol's (a short profile; recorded in ``gpu_profile.json`` and to be logged as
a deviation). A combined analysis of both profiles calls ``run_validate``, ``run_analyze`` and
``run_report`` with ``arms=`` every arm.
``summary`` prints ``gpu_profile.json``.

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
    from negotiation.ladder import write_base, write_tokenizer

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
    from negotiation.training.lm import RESUME_FILE, LmRuntime, lm_train_config_for, train_lm_arm

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
        partial = (results / "train" / run / RESUME_FILE).is_file()  # cut by an earlier call's time limit
        if (results / "train" / run / "curves.csv").is_file() and not partial:
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
        summary = train_lm_arm(cfg, results / "train" / run, track=False, resume=partial)
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
        folder: Path | None = None
        if arm.kind == "base":
            folder = results / "init" / arm.size
        elif arm.kind == "trained":
            parent = results / "train" / arm.parent_run if arm.parent_run else None
            if not (results / "train" / arm.run).is_dir():
                continue
            folder = Path(select_checkpoint(study, name, results / "train" / arm.run, arm=arm,
                                            parent_run_dir=parent).checkpoint)
        if (results / "evaluate" / name / "episodes.parquet").is_file() or _over(budget, f"evaluating {name}"):
            continue
        # a reference arm (scripted seller) plays its own spec, on the CPU
        seller = arm.seller if folder is None else f"hf:{folder.resolve()}?device={device}"
        cell = build_cell(study.protocol, arm=name, seller=seller)
        start = time.perf_counter()
        result = asyncio.run(evaluate_cell(cell, results / "evaluate" / name, study.protocol,
                                           protocol_hash=protocol_hash(study.name),
                                           # every episode in flight: the hf: seller batches their turns
                                           options=RunOptions(concurrency=concurrency, pilot=False),
                                           seller_sampling="self_served_seller"))
        eps = result.episodes
        ok = eps[eps["outcome"] != "error"]
        scores[name] = {"checkpoint": str(folder.relative_to(results)) if folder else seller,
                        "mean_S": round(float(ok["S"].mean()), 4),
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

    arms = _arms_of(study, sizes)
    trained = {n: a for n, a in arms.items() if a.kind == "trained" and (not args.arms or n in args.arms)}
    unknown = sorted(set(args.arms or ()) - {n for n, a in arms.items() if a.kind == "trained"})
    if unknown:
        raise SystemExit(f"--arms {', '.join(unknown)}: not trained arms of the sizes {', '.join(sizes)} "
                         f"(protocol/lm/arms.yaml)")
    record["bases"] = _build_bases(study, sizes, results, device, args.warm_steps)
    save()
    record["training"], record["evaluation"] = {}, {}
    bases = {n: a for n, a in arms.items() if a.kind == "base"}
    bases.update({n: a for n, a in study.arms.items() if a.kind == "reference"})
    record["evaluation"].update(_evaluate(study, bases, results, args.budget, device, args.concurrency))
    save()
    # Shared-LR arms first (the primary contrasts), then the 3x arms; each evaluated right after
    # its run so a spent budget leaves whole contrasts behind.
    for name, arm in sorted(trained.items(), key=lambda kv: (kv[1].lr_multiple, kv[0])):
        record["training"].update(_train(study, {name: arm}, results, args.steps, args.train_budget, device))
        save()
        record["evaluation"].update(_evaluate(study, {name: arm}, results, args.budget, device, args.concurrency))
        record["seconds"] = round(time.perf_counter() - START, 1)
        save()


def determinism(args) -> None:
    """Repeat on the GPU what the CPU test checks exactly: the same run (seed, steps) twice from the
    size's base, then the same generation requests twice; write what repeated bit for bit."""
    import hashlib

    import pandas as pd
    import torch

    from negotiation.lm import GenerationRequest, StaticBatchGenerator
    from negotiation.study import load_study
    from negotiation.training.lm import LmRuntime, lm_train_config_for, train_lm_arm

    study, results = load_study("lm"), Path(args.results)
    arm = study.arms[f"{args.size}_shared"]
    cuda = args.device != "cpu"
    runtime = LmRuntime(device=args.device, dtype="bfloat16" if cuda else "float32", gradient_checkpointing=cuda,
                        micro_batch_tokens=65536)
    out: dict = {"size": args.size, "steps": args.steps, "device": args.device}
    runs = []
    for k in (1, 2):
        cfg = lm_train_config_for(study, arm.run, arm, base=results / "init" / args.size, runtime=runtime)
        cfg = cfg.model_copy(update={"arm": cfg.arm.model_copy(update={"steps": args.steps})})
        folder = results / "determinism" / f"repeat{k}"
        train_lm_arm(cfg, folder, track=False)
        runs.append(folder)
    a, b = (pd.read_csv(f / "curves.csv") for f in runs)
    columns = [c for c in a.columns if c.startswith("train/")]
    out["curves_identical"] = {c: bool((a[c] == b[c]).all()) for c in columns}
    out["curves_max_abs_difference"] = {c: float((a[c] - b[c]).abs().max()) for c in columns}
    digest = [hashlib.sha256((f / f"step_{args.steps}" / "model.safetensors").read_bytes()).hexdigest() for f in runs]
    out["checkpoints_identical"] = digest[0] == digest[1]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(results / "init" / args.size, dtype=runtime.dtype).to(args.device).eval()
    tok = AutoTokenizer.from_pretrained(results / "init" / args.size)
    prompts = [tok.encode(f"<start_of_turn>user\nOffer {i}<end_of_turn>\n<start_of_turn>model\n") for i in range(64)]
    requests = [GenerationRequest(prompt_ids=tuple(p), seed=i, max_new_tokens=128, temperature=1.0, top_p=0.95,
                                  top_k=64) for i, p in enumerate(prompts)]
    gen = StaticBatchGenerator(model, pad_token_id=tok.pad_token_id or 0, stop_token_ids=[tok.eos_token_id])
    first, second = gen.generate(requests), gen.generate(requests)
    out["generation_identical"] = [g.token_ids for g in first] == [g.token_ids for g in second]
    out["generation_logprobs_identical"] = [g.logprobs for g in first] == [g.logprobs for g in second]
    (results / "determinism.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


def track(args) -> None:
    """Log each returned run's curves (``curves.csv``, ``validation.csv``, ``timing.csv``) to MLflow
    here, one run per training run in the study's experiment, tagged as the trainer tags its own
    (the GPU machine has no MLflow): the KL and entropy curves then show in the MLflow UI."""
    import pandas as pd

    from negotiation.study import load_study
    from negotiation.tracking import MlflowTracker, experiment_name

    study, results = load_study("lm"), Path(args.results)
    profile = json.loads((results / "gpu_profile.json").read_text(encoding="utf-8"))
    for run_dir in sorted((results / "train").iterdir()):
        arm = study.arms.get(run_dir.name)
        if arm is None or not (run_dir / "curves.csv").is_file():
            continue
        tags = {"study": "lm", "arm": arm.run, "size": arm.size, "lr_multiple": arm.lr_multiple, "backend": "token",
                "phase": "training", "device": profile.get("device", ""), "source_machine": "gpu_profile.py run"}
        tracker = MlflowTracker(experiment_name("lm"), arm.run, {"gpu_profile": json.dumps(
            profile.get("training", {}).get(arm.run, {}))}, tags)
        for name in ("curves.csv", "validation.csv", "timing.csv"):
            frame = pd.read_csv(run_dir / name)
            key = "combined_step" if "combined_step" in frame else "step"
            prefix = "timing/" if name == "timing.csv" else ""
            for row in frame.to_dict("records"):
                tracker.log_step(int(row[key]), {f"{prefix}{k}": v for k, v in row.items()
                                                 if k not in ("step", "combined_step") and pd.notna(v)})
        tracker.finish()
        print(f"{arm.run}: MLflow run {tracker.run_id}")


def profile_arms(study, results: Path) -> list[str]:
    """The GPU profile's arms that have episode tables under ``results``, plus the reference arms."""
    from negotiation.study import ResultsLayout

    layout = ResultsLayout(results)
    chosen = study.gpu_profile_arms() | {n for n, a in study.arms.items() if a.kind == "reference"}
    return sorted(n for n in chosen if layout.episodes(n).is_file())


def analyze(args) -> None:
    """validate -> analyze -> report over the GPU profile's tables (``arms=``, see ``profile_arms``)."""
    from negotiation.pipeline import run_analyze, run_report, run_validate
    from negotiation.study import load_study

    import yaml

    results = Path(args.results)
    seed = args.seed if args.seed is not None else yaml.safe_load(Path("params.yaml").read_text())["analysis"]["seed"]
    arms = profile_arms(load_study("lm"), results)
    print(f"arms: {', '.join(arms)}")
    report = run_validate("lm", results, arms=arms)
    print(f"validation: success={report['success']}")
    summary = run_analyze("lm", results, results / "analyze", seed=seed, arms=arms)
    print(f"analysis: {json.dumps(summary)}")
    paths = run_report("lm", results, results / "report", seed=seed, track=False, arms=arms)
    print(f"report: {paths.get('report.md', paths)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--results", default="outputs/lm")
    r.add_argument("--sizes", nargs="*")
    r.add_argument("--steps", type=int, default=None)
    r.add_argument("--arms", nargs="*", help="train and evaluate only these trained arms (default: every "
                   "trained arm of the sizes); bases and reference sellers are evaluated either way")
    r.add_argument("--warm-steps", type=int, default=None, help="warm-start steps (default: the protocol's)")
    r.add_argument("--device", default="cuda", help="cuda (the GPU profile) or cpu (a dry run)")
    r.add_argument("--train-budget", type=float, default=None, help="seconds after which no run starts")
    r.add_argument("--budget", type=float, default=None, help="seconds after which no evaluation starts")
    r.add_argument("--concurrency", type=int, default=36, help="evaluation episodes in flight (their seller "
                   "turns are generated as one batch)")
    s = sub.add_parser("summary")
    s.add_argument("--results", default="outputs/lm")
    a = sub.add_parser("analyze", help="validate, analyze and report the GPU profile's tables (no DVC)")
    a.add_argument("--results", default="outputs/lm")
    a.add_argument("--seed", type=int, default=None, help="bootstrap seed (default params.yaml analysis.seed)")
    d = sub.add_parser("determinism", help="the same short run twice and the same generation twice, on the GPU")
    d.add_argument("--results", default="outputs/lm")
    d.add_argument("--size", default="lm_m")
    d.add_argument("--steps", type=int, default=2)
    d.add_argument("--device", default="cuda")
    t = sub.add_parser("track", help="log the returned runs' curves to MLflow (MLFLOW_TRACKING_URI)")
    t.add_argument("--results", default="outputs/lm")
    args = p.parse_args()
    if args.command == "track":
        track(args)
    elif args.command == "run":
        run(args)
    elif args.command == "analyze":
        analyze(args)
    elif args.command == "determinism":
        determinism(args)
    else:
        print((Path(args.results) / "gpu_profile.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
