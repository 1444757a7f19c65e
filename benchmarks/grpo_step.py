"""Seconds per GRPO step of the token trainer, this checkout beside another revision, per size.

Each side trains the same run (``<size>`` at the lm protocol's recipe for that size: the GPU
profile's 16 x 8 episodes on a GPU size) for ``--steps`` steps from the same warm-started base and
reads the trainer's own ``timing.csv``: generation seconds, generated tokens/s in the rollout
loop, update seconds, model FLOP utilisation of the update (``6 N`` per trained token against
``--peak-tflops``) and peak memory. The first step (CUDA-graph capture, kernel warm-up) is
reported apart; the figures are medians over the later steps. Both sides run in fresh
processes, ours first, then the reference, and the ratios are printed side by side.

    python benchmarks/grpo_step.py --sizes lm_m,lm_l --device cuda --against e4e51d7      # a git revision
    python benchmarks/grpo_step.py --sizes lm_m --device cuda --against-tree .oldrev      # a copied tree
    python benchmarks/grpo_step.py --small                                                # CI: seconds, CPU

The reference side runs the trainer as that revision's own GPU profile ran it (gradient
checkpointing on); ours with ``--checkpointing`` as given (default off). Both sides use
``--micro-batch-tokens`` (default 131,072: a step's ~220k sequence tokens in two micro-batches).
``--small`` trains a tiny size (lm_xs, untrained base, 2 scenarios x 4 rollouts, 2 turns, 2 steps)
on the CPU against this checkout itself: it checks the script, not the speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def checkout(rev: str, into: Path) -> Path:
    """``git archive`` of ``rev``'s package into ``into`` (no work tree touched)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "negotiation", "protocol", "registry", "pipelines"],
                             cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def prepare(out: Path, sizes: list[str], warm_steps: int, device: str, small: bool = False) -> None:
    """Tokenizer and each size's warm-started base under ``out`` (this checkout's code; kept);
    ``small``: the tokenizer from a cut corpus (seconds)."""
    from negotiation.ladder import write_base, write_tokenizer
    from negotiation.study import load_study

    protocol = load_study("lm").protocol
    if small:
        from _small import small_lm_protocol

        protocol = small_lm_protocol(protocol)
    tok = out / "tokenizer"
    if not (tok / "tokenizer.json").is_file():
        write_tokenizer(protocol, tok)
    for size in sizes:
        if not (out / "init" / size / "config.json").is_file():
            write_base(protocol, size, tok, out / "init" / size, steps=warm_steps, device=device, log=lambda _: None)
    if device != "cpu":  # the workers train in their own processes: hand this one's cached memory back
        import torch

        torch.cuda.empty_cache()


def _small_protocol(protocol):
    t = protocol.recipe_for("lm_xs")
    t = t.model_copy(update={"group_size": 4, "scenarios_per_step": 2, "episodes_per_step": 8, "rollout_turns": 2,
                             "validation_scenarios": 2, "sequences": t.sequences.model_copy(
                                 update={"new_tokens_per_turn": 16})})
    return protocol.model_copy(update={"training": t})


def _warmup_within(protocol, size: str, steps: int):
    """``protocol`` with ``size``'s warm-up no longer than a timing run's ``steps``: the schedule
    refuses a warm-up past the run's end, and the GPU recipe warms up for 5 steps. The rate does
    not change a step's time. (A reference tree older than ``recipe_key_for`` has one recipe.)"""
    key = protocol.recipe_key_for(size) if hasattr(protocol, "recipe_key_for") else "training"
    recipe = getattr(protocol, key)
    if recipe.warmup_steps <= steps:
        return protocol
    return protocol.model_copy(update={key: recipe.model_copy(update={"warmup_steps": steps})})


def worker(spec: dict) -> dict:
    """Train ``spec['size']`` for ``spec['steps']`` steps with the code on ``sys.path``; the timing rows."""
    import pandas as pd
    import torch

    from negotiation.study import load_study
    from negotiation.training.lm import LmRuntime, lm_train_config_for, train_lm_arm

    study = load_study("lm", Path(spec["root"]))
    size = spec["size"]
    arm = next(a for a in study.arms.values() if a.kind == "trained" and a.parent_run is None)
    arm = arm.model_copy(update={"size": size})
    cuda = spec["device"] != "cpu"
    knobs = {"compile_rollout": True} if spec.get("compile") else {}  # the reference side's record lacks it
    runtime = LmRuntime(device=spec["device"], dtype="bfloat16" if cuda else "float32",
                        gradient_checkpointing=spec["checkpointing"], micro_batch_tokens=spec["micro_batch_tokens"], **knobs)
    cfg = lm_train_config_for(study, arm.run, arm, base=Path(spec["base"]), runtime=runtime)
    update = {"arm": cfg.arm.model_copy(update={"steps": spec["steps"]})}
    if spec.get("small"):
        update["protocol"] = _small_protocol(cfg.protocol)
    else:
        update["protocol"] = _warmup_within(cfg.protocol, size, spec["steps"])
    cfg = cfg.model_copy(update=update)
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats()
    run_dir = Path(tempfile.mkdtemp(prefix=f"grpo_{size}_"))
    profiled: list = []
    if spec.get("profile_update"):
        _profile_last_update(spec["steps"], profiled)
    train_lm_arm(cfg, run_dir, track=False)
    return {"rows": pd.read_csv(run_dir / "timing.csv").to_dict("records"), "update_profile": profiled}


def _profile_last_update(steps: int, out: list, top: int = 14) -> None:
    """Wrap the trainer's update so that the run's last one runs under ``torch.profiler``; ``out``
    gets its kernels by device time. The wrap replaces the name the trainer module looks up (this
    script's only reach into a private module: the update has no profiling hook of its own)."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    from negotiation.training.lm import _trainer

    step_fn, calls = _trainer.grpo_token_step, [0]

    def wrapped(*a, **kw):
        calls[0] += 1
        if calls[0] < steps:
            return step_fn(*a, **kw)
        before = torch.cuda.memory_stats()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            result = step_fn(*a, **kw)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
        after = torch.cuda.memory_stats()
        # kernels only: an aten op's row repeats the device time of the kernels it launched
        events = [e for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0
                  and not e.key.startswith("aten::")]
        total = sum(e.self_device_time_total for e in events)
        events.sort(key=lambda e: -e.self_device_time_total)
        # allocator retries and cudaMalloc/cudaFree calls are host syncs: a full cache shows here
        memory = {k: after.get(k, 0) - before.get(k, 0) for k in ("num_alloc_retries", "num_device_alloc", "num_device_free")}
        out.append({"kernel": "(update wall, all kernels)", "ms": round(wall * 1e3, 1), "device_ms": round(total / 1e3, 1),
                    "calls": sum(e.count for e in events), **memory,
                    "reserved_gb": round(after.get("reserved_bytes.all.peak", 0) / 2**30, 2)})
        out.extend({"kernel": e.key[:90], "device_ms": round(e.self_device_time_total / 1e3, 2), "calls": e.count,
                    "share": round(e.self_device_time_total / total, 3)} for e in events[:top])
        return result

    _trainer.grpo_token_step = wrapped


def summarize(rows: list[dict], peak_flops: float) -> dict:
    """First step apart, medians of the later steps (all of them when there is one)."""
    later = rows[1:] or rows
    step = [r["generation_seconds"] + r["training_seconds"] for r in later]
    n = rows[0]["parameters"]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in later)
    update_flops = [6 * n * r["sequence_tokens"] / r["training_seconds"] for r in later]
    engine = {f"{key}_median": round(med(key), 3) for key in ("env_seconds", "feed_seconds", "device_wait_seconds", "decode_steps",
                                                             "live_share") if key in later[0]}  # the slot engine's split
    return {**engine, "parameters": int(n), "first_step_s": round(rows[0]["generation_seconds"] + rows[0]["training_seconds"], 2),
            "step_s": round(statistics.median(step), 3), "generation_s": round(med("generation_seconds"), 3),
            "update_s": round(med("training_seconds"), 3),
            "generated_tokens_per_s": round(med("generated_tokens_per_second")),
            "generated_tokens_per_step": round(med("generated_tokens")),
            "update_mfu": round(statistics.median(update_flops) / peak_flops, 4),
            "peak_memory_gb": round(max(r.get("peak_memory_gb", float("nan")) for r in rows), 2)}


def run_side(tree: Path, spec: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)], cwd=tree,
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: worker failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="lm_m")
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--warm-steps", type=int, default=200, help="warm start of each base (realistic turn lengths)")
    p.add_argument("--against", help="git revision of the reference side")
    p.add_argument("--against-tree", help="a folder holding the reference side's package (no git needed)")
    p.add_argument("--checkpointing", action="store_true", help="gradient checkpointing on our side")
    p.add_argument("--micro-batch-tokens", type=int, default=131072, help="both sides' update micro-batch budget")
    p.add_argument("--compile", action="store_true", help="torch.compile the rollout engine on our side")
    p.add_argument("--profile-update", action="store_true",
                   help="(cuda) our side's last update under torch.profiler: its kernels by device time")
    p.add_argument("--peak-tflops", type=float, default=790.0, help="dense bf16 peak (H200: 790, measured)")
    p.add_argument("--work", default=None, help="folder for the tokenizer and bases (default: a temporary one)")
    p.add_argument("--out", default=None, help="write every figure as JSON here")
    p.add_argument("--small", action="store_true")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.profile_update and args.device == "cpu":
        p.error("--profile-update needs a CUDA device")
    if args.small:
        args.sizes, args.device, args.steps, args.warm_steps = "lm_xs", "cpu", 2, 0
    work = Path(args.work or tempfile.mkdtemp(prefix="grpo_step_"))
    sizes = args.sizes.split(",")
    prepare(work, sizes, args.warm_steps, args.device, args.small)
    sides = {"ours": (REPO, args.checkpointing)}
    if args.against_tree:
        sides["reference"] = (Path(args.against_tree).resolve(), True)
    elif args.against:
        sides["reference"] = (checkout(args.against, Path(tempfile.mkdtemp(prefix="grpo_ref_"))), True)
    results: dict = {}
    for size in sizes:
        for side, (tree, checkpointing) in sides.items():
            spec = {"root": str(tree), "size": size, "device": args.device, "steps": args.steps,
                    "base": str(work / "init" / size), "checkpointing": checkpointing,
                    "micro_batch_tokens": args.micro_batch_tokens, "small": args.small,
                    "compile": args.compile and side == "ours",
                    "profile_update": args.profile_update and side == "ours"}
            worker_out = run_side(tree, spec)
            results.setdefault(size, {})[side] = summarize(worker_out["rows"], args.peak_tflops * 1e12)
            if worker_out.get("update_profile"):
                results[size][side]["update_profile"] = worker_out["update_profile"]
            print(f"{size} {side:9s} {json.dumps(results[size][side])}", flush=True)
        if "reference" in results[size]:
            ours, ref = results[size]["ours"], results[size]["reference"]
            print(f"{size} ratios (reference / ours): step {ref['step_s'] / ours['step_s']:.1f}x, generation "
                  f"{ref['generation_s'] / ours['generation_s']:.1f}x, tokens/s "
                  f"{ours['generated_tokens_per_s'] / max(ref['generated_tokens_per_s'], 1):.1f}x", flush=True)
        if args.out:  # after each size: a GPU call cut by its time limit keeps the sizes it finished
            Path(args.out).write_text(json.dumps({"device": args.device, "steps": args.steps,
                                                  "warm_steps": args.warm_steps, "sizes": results}, indent=2) + "\n",
                                      encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
