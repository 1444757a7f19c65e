"""The token trainer's learning ladder: run its tasks at their budgets, print curves and verdicts.

Each task of ``protocol/lm/learning.yaml`` (format, opening, negotiation) runs end to end through
``negotiation.training.lm.run_learning_task``: the study's tokenizer, a base warm-started for the
budget's steps (built once under ``--out`` and reused), the ordinary ``train_lm_arm`` with the
task's recipe overrides, then the task's pass criteria on the run's curves. Prints per task the
curves by step (reward, bad-parse rate, KL penalty, gradient norm) and the verdict, and writes
``learning.json`` under ``--out``. Exits 1 when a task fails (not with ``--small``). A task whose
criteria read against a frozen control trains that control too; ``--control`` adds one to every
task; ``--resume`` continues runs a GPU call's time limit cut (same ``--out``). ``--jobs N`` trains
up to N runs (each task's run and its control) at once, one process each, after this process built
the bases (a rollout keeps a few host cores and a small share of one H200 busy); each process logs
to ``--out/<task>_<part>.log``, and the verdicts are read here once all have finished.

    python benchmarks/learning.py --device cpu --out /tmp/learning              # cpu budgets, 2 cores
    python benchmarks/learning.py --device cuda --out $OUT                      # gpu budgets, one H200
    python benchmarks/learning.py --small --out /tmp/learning-small             # plumbing, seconds
    python benchmarks/learning.py --device cpu --tasks opening --control --baseline group_mean \
        --normalize-rewards true --out /tmp/learning-group-mean                 # another estimator, own --out

``--small`` shrinks everything (a one-persona corpus, no warm start, 2 steps of 3 rollouts of
16-token turns) so the whole path runs in seconds on the CPU; its verdicts mean nothing.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CURVE_COLUMNS = ("train/reward", "train/bad_parse_rate", "train/kl_penalty", "train/grad_norm",
                 "train/mean_gen_tokens")


def _small(protocol: Any, ladder: Any) -> tuple[Any, Any]:
    """The protocol and ladder cut to a seconds-long run of every cpu task."""
    from negotiation.protocol import LearningWarmStart

    ws = protocol.warm_start
    corpus = ws.corpus.model_copy(update={"sellers": ws.corpus.sellers[:1], "train_seeds_per_domain": 1,
                                          "validation_seeds_per_domain": 1})
    sequences = protocol.training.sequences.model_copy(update={"new_tokens_per_turn": 16})
    protocol = protocol.model_copy(update={
        "warm_start": ws.model_copy(update={"corpus": corpus}),
        "training": protocol.training.model_copy(update={"sequences": sequences})})
    tasks = {}
    for name, task in ladder.tasks.items():
        if task.cpu is None:
            continue
        budget = task.cpu.model_copy(update={"warm_start": LearningWarmStart(steps=0), "steps": 2, "group_size": 3,
                                             "scenarios_per_step": 1})
        criteria = tuple(c.model_copy(update={"window": 1}) for c in task.criteria)
        tasks[name] = task.model_copy(update={"cpu": budget, "criteria": criteria, "validation_scenarios": 1})
    return protocol, ladder.model_copy(update={"tasks": tasks})


def _curves(run_dir: Path) -> dict[str, list[float]]:
    import pandas as pd

    from negotiation.training.lm import CURVES_FILE

    table = pd.read_csv(run_dir / CURVES_FILE)
    return {c: [float(v) for v in table[c]] for c in ("step", *CURVE_COLUMNS) if c in table.columns}


def _print_task(name: str, verdict: dict[str, Any], curves: dict[str, list[float]], seconds: float) -> None:
    print(f"\n== {name} ({verdict['machine']}, {verdict['size']}, {verdict['steps']} steps, lr "
          f"{verdict['learning_rate']:g}, base {verdict['base']}): {seconds:.0f} s")
    cols = [c for c in CURVE_COLUMNS if c in curves]
    print("step " + " ".join(f"{c.split('/')[-1]:>14}" for c in cols))
    for i, step in enumerate(curves["step"]):
        print(f"{int(step):4d} " + " ".join(f"{curves[c][i]:14.4f}" for c in cols))
    for c in verdict["criteria"]:
        print(f"{c['metric']}: first-{c['window']} mean {c['first_mean']:.4f} -> last-{c['window']} mean "
              f"{c['last_mean']:.4f}, change {c['change']:+.4f} (needs {c['direction']} >= {c['min_change']}): "
              f"{'PASS' if c['passed'] else 'FAIL'}")
    for c in verdict.get("paired", []):
        print(f"{c['metric']} minus the frozen control (same scenarios and seeds): first-{c['window']} mean "
              f"{c['first_mean']:+.4f} -> last-{c['window']} mean {c['last_mean']:+.4f}, change {c['change']:+.4f}")


def _part_command(args: argparse.Namespace, name: str, part: str) -> list[str]:
    """This benchmark's command line for one part (``run``/``control``) of task ``name``."""
    cmd = [sys.executable, __file__, "--device", args.device, "--tasks", name, "--part", part, "--resume",
           "--threads", str(args.threads), "--out", str(args.out)]
    for flag, value in (("--size", args.size), ("--seed", args.seed), ("--micro-batch-tokens", args.micro_batch_tokens),
                        ("--baseline", args.baseline), ("--normalize-rewards", args.normalize_rewards)):
        cmd += [] if value is None else [flag, str(value).lower()]
    return cmd + [flag for flag, on in (("--small", args.small), ("--compile", args.compile),
                                        ("--control", args.control)) if on]


def _train_side_by_side(args: argparse.Namespace, parts: list[tuple[str, str]], jobs: int | None = None) -> None:
    """Run each ``(task, part)`` in its own process, at most ``jobs`` (default ``args.jobs``) at a time. A failing part,
    or this process stopped by SIGTERM (a GPU call's time limit), stops the others too: they resume
    from their last checkpoint on the next ``--resume`` call instead of writing on unsupervised."""
    running: list[tuple[str, subprocess.Popen]] = []
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        for name, part in parts:
            while len(running) >= (jobs or args.jobs):
                _wait_one(running)
            with open(args.out / f"{name}_{part}.log", "a", encoding="utf-8") as log:
                running.append((f"{name} {part}", subprocess.Popen(_part_command(args, name, part), stdout=log,
                                                                   stderr=subprocess.STDOUT)))
        while running:
            _wait_one(running)
    finally:
        for _, proc in running:
            proc.terminate()
        for _, proc in running:
            proc.wait()
        signal.signal(signal.SIGTERM, previous)


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def _wait_one(running: list[tuple[str, subprocess.Popen]]) -> None:
    label, proc = running.pop(0)
    if proc.wait() != 0:
        raise SystemExit(f"{label}: exit status {proc.returncode} (its log is under --out)")


def _with_overrides(ladder: Any, machine: str, args: argparse.Namespace) -> Any:
    """The ladder with ``--seed``, ``--baseline``, ``--normalize-rewards`` set in every ``machine``
    budget: the budgets' own keys, as a task of learning.yaml would set them."""
    overrides = {k: v for k, v in (("seed", args.seed), ("baseline", args.baseline),
                                   ("normalize_rewards", args.normalize_rewards)) if v is not None}
    if not overrides:
        return ladder
    tasks = {n: t.model_copy(update={machine: getattr(t, machine).model_copy(update=overrides)})
             for n, t in ladder.tasks.items() if getattr(t, machine) is not None}
    return ladder.model_copy(update={"tasks": tasks})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu: the cpu budgets; cuda: the gpu budgets")
    parser.add_argument("--tasks", nargs="*", default=None, help="default: every task with a budget here")
    parser.add_argument("--size", default=None, help="default: each budget's first size")
    parser.add_argument("--seed", type=int, default=None, help="training seed (default: the budget's)")
    parser.add_argument("--baseline", choices=("leave_one_out", "group_mean"), default=None,
                        help="advantage baseline of every run (default: the budget's; give it its own --out)")
    parser.add_argument("--normalize-rewards", choices=("true", "false"), default=None,
                        help="divide advantages by their baseline's std (default: the budget's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--small", action="store_true", help="a seconds-long run of the plumbing (cpu)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the rollout engine (cuda)")
    parser.add_argument("--micro-batch-tokens", type=int, default=None,
                        help="padded tokens per update micro-batch (default: LmRuntime's)")
    parser.add_argument("--control", action="store_true",
                        help="also train each task frozen (a control) and print every curve criterion paired against it")
    parser.add_argument("--resume", action="store_true",
                        help="continue runs an earlier call left partial under --out; keep finished ones")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once, one process each")
    parser.add_argument("--part", choices=("base", "run", "control"), default=None,
                        help="build only the base, or train only this run, of each task; no verdict (what --jobs starts)")
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.normalize_rewards is not None:
        args.normalize_rewards = args.normalize_rewards == "true"

    from negotiation.study import load_study
    from negotiation.learning import run_learning_task
    from negotiation.training.lm import LmRuntime, needs_frozen_control

    study = load_study("lm")
    protocol, ladder = study.protocol, study.learning
    if args.small:
        protocol, ladder = _small(protocol, ladder)
    machine = "cpu" if args.device == "cpu" else "gpu"
    names = args.tasks or [n for n, t in ladder.tasks.items() if getattr(t, machine) is not None]
    ladder = _with_overrides(ladder, machine, args)
    runtime = LmRuntime(device=args.device, dtype="float32" if machine == "cpu" else "bfloat16", threads=args.threads,
                        compile_rollout=args.compile,
                        **({} if args.micro_batch_tokens is None else {"micro_batch_tokens": args.micro_batch_tokens}))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part:
        parts = () if args.part == "base" else (args.part,)
        for name in names:
            run_learning_task(protocol, ladder, name, machine=machine, out=args.out, size=args.size, runtime=runtime,
                              control=args.control, resume=args.resume, parts=parts)
        return 0
    if args.jobs > 1:
        # the bases first, one at a time, in a process of their own: the GPU memory it held (15 GB for
        # lm_m's warm start) returns when it exits, before the runs side by side need it
        _train_side_by_side(args, [(name, "base") for name in names], jobs=1)
        _train_side_by_side(args, [(name, part) for name in names for part in ("run", "control")
                                   if part == "run" or args.control or needs_frozen_control(ladder.tasks[name])])
        args.resume = True  # the verdicts below read the finished runs
    results = {}
    for name in names:
        start = time.perf_counter()
        verdict = run_learning_task(protocol, ladder, name, machine=machine, out=args.out, size=args.size,
                                    runtime=runtime, control=args.control,
                                    resume=args.resume)
        seconds = time.perf_counter() - start
        curves = _curves(args.out / f"{name}_{verdict['size']}")
        _print_task(name, verdict, curves, seconds)
        results[name] = {**verdict, "curves": curves, "seconds": seconds}
    report = {"version": 1, "device": args.device, "small": args.small, "tasks": results,
              "passed": all(r["passed"] for r in results.values())}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out / 'learning.json'}: {'all passed' if report['passed'] else 'FAILED'}")
    return 0 if report["passed"] or args.small else 1


if __name__ == "__main__":
    raise SystemExit(main())
