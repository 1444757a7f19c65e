"""The demo trainer's cost and whether RL works, from the frozen demo protocol.

Modes::

    python benchmarks/training.py speed                  # s/step at 128 and 64 episodes, every width
    python benchmarks/training.py sweep --out DIR        # the shared-LR choice, validation only
    python benchmarks/training.py demo --out DIR         # train every demo run, time per arm
    python benchmarks/training.py check --out DIR        # trained arms vs their base, held-out buyers
    python benchmarks/training.py --against main [--run w64_shared_init] [--rounds 3]
    python benchmarks/training.py speed --small          # CI: the smallest width, 16 episodes, untrained

``sweep`` applies the shared-LR rule on validation only (training seed block, never evaluation
seeds): walking a half-decade grid upward, train the largest width's 3x initial run at 3x each
value and keep the largest value whose run neither collapses (final entropy < 0.05) nor ends at or
below its step-0 validation score. Adam's tolerable rate shrinks with width, so the largest width
at 3x is the binding run of the matrix (the 10x arm is expected to over-train, as in the paper). ``check`` plays every evaluated
domain x evaluation seed x held-out buyer for each arm's read checkpoint and its size's untrained
base, and prints the paired difference in S with a seed-cluster percentile bootstrap interval
(the paper's reference: 2.3B at 3x LR, +0.037 [+0.017, +0.057]). Exit status 1 when the largest
width's 3x arm does not beat its base with an interval excluding 0.

``--against REV`` times one ``train@<run>`` stage (``pipelines/train.py``, a fresh process:
imports included) of this checkout beside the same stage at git revision ``REV`` (``git
archive``, no work tree touched), in alternating runs (ours, theirs, ours, ...; each side's own
``init@<size>`` first), and reports the median CPU seconds (user + system of the child) of
each side. Both sides write to the same folder path, so the run folders (every ``step_N/``
file, ``curves.csv``, ``validation.csv``, ``mlflow_run.json`` with its git-commit tags
blanked) must be identical byte for byte; exit status 1 when they are not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from negotiation.agents import Policy, PolicyAgent, PolicyArch, make_agent
from negotiation.env import EnvConfig, load_domain, make_scenario, run_episode
from negotiation.pipeline import rollout_processes
from negotiation.study import load_study
from negotiation.training import (
    CURVES_FILE,
    ScenarioMaker,
    final_checkpoint,
    loo_advantages,
    play,
    train_arm,
    train_config_for,
    training_env,
    training_items,
    training_runs,
    write_initial_policy,
)
from negotiation.training._run import _start
from negotiation.training._trainer import _grpo_update, _setup

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import checkout  # noqa: E402  (the one git-archive helper of the benchmarks)

SWEEP_GRID = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
REPO = Path(__file__).resolve().parents[1]
_COMMIT_TAGS = ("git_commit", "mlflow.source.git.commit")  # "unknown" in a git archive


def evaluation_env(protocol) -> EnvConfig:
    return replace(training_env(protocol), accept_applies_terms=protocol.environment.accept_terms_applied.evaluation,
                   phase="evaluation")


def speed(study, small: bool = False) -> None:
    """Process seconds of one rollout + update step per width, untrained and hold-out policies
    (``small``: the smallest width, 16 episodes, untrained only)."""
    torch.set_num_threads(1)
    env, cfg0 = training_env(study.protocol), train_config_for(study, training_runs(study)[0])
    maker = ScenarioMaker(cfg0.data.dirichlet_alpha)
    print(f"{'width':>6} {'episodes':>9} {'policy':>9} {'seller turns':>13} {'s/step':>7}")
    sizes = sorted(study.protocol.sizes.items(), key=lambda kv: kv[1].width)
    for name, size in sizes[:1] if small else sizes:
        for episodes in (16,) if small else (128, 64):
            for kind in ("untrained",) if small else ("untrained", "hold-out"):
                cfg = cfg0.model_copy(update={"arm": cfg0.arm.model_copy(update={"arch": PolicyArch(width=size.width)})})
                st = _setup(cfg, _start(cfg.arm, Path("/nonexistent")))
                if kind == "hold-out":  # rarely accepts: episodes run to the buyer's deadline
                    with torch.no_grad():
                        st.policy.net.accept_head.bias.copy_(torch.tensor([3.0, -3.0]))
                n_scn = episodes // cfg.recipe.group_size
                items = training_items(cfg.data, 0, 0, n_scn)
                jobs = [(maker.scenario(it), maker.buyer(it), 1000 * k + g)
                        for k, it in enumerate(items) for g in range(cfg.recipe.group_size)]
                t0 = time.process_time()
                ro = play(st.policy, "policy:bench", jobs, env)
                adv = loo_advantages(ro.rewards.reshape(n_scn, -1)).reshape(-1)
                _grpo_update(st, ro, adv, cfg, 1e-3)
                dt = time.process_time() - t0
                print(f"{size.width:>6} {episodes:>9} {kind:>9} {len(ro.actions):>13} {dt:>7.2f}")


def _base(study, size: str, out: Path) -> Path:
    """The size's base as ``init@`` writes it (warm-started where the protocol says), once per ``out``."""
    folder = out / "bases" / size
    return folder if (folder / "weights.pt").is_file() else write_initial_policy(study, size, folder)


def _run_config(study, run: str, out: Path, parent: Path | None = None):
    """``train_config_for`` as ``train@`` calls it: a fresh run starts from its size's base."""
    size = next(a.size for a in study.arms.values() if a.kind == "trained" and a.run == run)
    return train_config_for(study, run, parent=parent, base=None if parent else _base(study, size, out))


def _collapsed(summary, run_dir: Path) -> bool:
    """Validation no better than at step 0, or a near-deterministic policy at the end."""
    entropy = pd.read_csv(run_dir / CURVES_FILE)["train/entropy"].iloc[-1]
    scores = [summary.val_scores[s] for s in sorted(summary.val_scores)]
    return bool(np.mean(scores[-3:]) <= scores[0] or entropy < 0.05)


def sweep(study, out: Path) -> None:
    """The shared-LR rule: the largest grid LR whose 3x multiple trains the largest width
    without collapse on validation (grid walked upward, stopping at the first collapse)."""
    largest = max(study.protocol.sizes.values(), key=lambda s: s.width)
    run = next(a.run for a in study.arms.values() if a.kind == "trained" and a.parent_run is None
               and a.lr_multiple == 3 and study.protocol.sizes[a.size].width == largest.width)
    base, env, chosen, results = _run_config(study, run, out), training_env(study.protocol), None, {}
    for lr in SWEEP_GRID:
        recipe = base.recipe.model_copy(update={"learning_rate": lr,
                                                 "lr_floor": lr * base.recipe.lr_floor / base.recipe.learning_rate})
        run_dir = out / f"sweep_{lr:g}"
        summary = train_arm(base.model_copy(update={"recipe": recipe}), env, run_dir, track=False)
        collapsed = _collapsed(summary, run_dir)
        results[f"{lr:g}"] = {"validation": list(summary.val_scores.values()), "collapsed": collapsed}
        print(f"shared {lr:g} (3x = {3 * lr:g}) on {run}: validation "
              f"{[round(v, 3) for v in summary.val_scores.values()]} {'COLLAPSED' if collapsed else 'ok'} "
              f"({summary.seconds:.0f} s)", flush=True)
        if collapsed:
            break
        chosen = lr
    print(f"shared LR: {chosen:g}" if chosen else "no grid LR trains without collapse")
    (out / "sweep.json").write_text(json.dumps({"chosen": chosen, "runs": results}, indent=2))


def demo(study, out: Path) -> dict[str, dict]:
    """Train every run of the study (parents first); seconds per run and validation."""
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{(out / 'mlflow.db').resolve()}")
    env, report = training_env(study.protocol), {}
    for run in training_runs(study):
        parent_run = next(a.parent_run for a in study.arms.values() if a.run == run)
        parent = final_checkpoint(out / parent_run) if parent_run else None
        summary = train_arm(_run_config(study, run, out, parent), env, out / run)
        val = [round(v, 3) for v in summary.val_scores.values()]
        report[run] = {"seconds": round(summary.seconds, 1), "cpu_seconds": round(summary.cpu_seconds, 1),
                       "validation": val}
        print(f"{run:>18}: {summary.seconds:6.1f} s wall {summary.cpu_seconds:6.1f} s CPU  "
              f"validation {val}", flush=True)
    total = sum(r["seconds"] for r in report.values())
    cpu = sum(r["cpu_seconds"] for r in report.values())
    print(f"total training time: {total:.0f} s wall, {cpu:.0f} s CPU for {len(report)} runs")
    (out / "demo_training.json").write_text(json.dumps(report, indent=2))
    return report


def _play_arm(agent, study, env) -> dict[tuple, float]:
    p = study.protocol
    scores = {}
    for domain_name in p.domains.evaluated:
        domain = load_domain(domain_name)
        for seed in p.seeds.evaluation.seeds():
            scenario = make_scenario(domain, seed, p.environment.dirichlet_alpha)
            for buyer_name, buyer in p.buyers.evaluation.items():
                ep = run_episode(scenario, agent, make_agent(buyer.spec, "buyer"), env)
                scores[(domain_name, seed, buyer_name)] = ep.S
    return scores


def paired_bootstrap(diff: dict[tuple, float], resamples: int, seed: int) -> tuple[float, float, float]:
    """Mean paired difference and its seed-cluster percentile 95% interval."""
    seeds = sorted({k[1] for k in diff})
    sums = np.array([sum(v for k, v in diff.items() if k[1] == s) for s in seeds])
    counts = np.array([sum(1 for k in diff if k[1] == s) for s in seeds])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(seeds), size=(resamples, len(seeds)))
    boot = sums[draws].sum(1) / counts[draws].sum(1)
    return float(sums.sum() / counts.sum()), *np.percentile(boot, [2.5, 97.5]).tolist()


def check(study, out: Path) -> int:
    """Each trained arm at its read point against its size's base, held-out buyers."""
    torch.set_num_threads(1)
    env, failed = evaluation_env(study.protocol), 1
    bases: dict[str, dict] = {}
    print(f"{'arm':>18} {'step':>5} {'base S':>7} {'arm S':>7} {'gain':>7} {'95% CI':>18}")
    for name, arm in study.arms.items():
        if arm.kind != "trained":
            continue
        if arm.size not in bases:
            base = Policy.load(_base(study, arm.size, out))
            bases[arm.size] = _play_arm(PolicyAgent("policy:base", "seller", base), study, env)
        offset = study.protocol.training.initial_steps if arm.parent_run else 0
        step = study.read_step(arm) - offset
        folder = out / arm.run / f"step_{step}"
        scores = _play_arm(make_agent(f"policy:{folder}", "seller"), study, env)
        diff = {k: scores[k] - bases[arm.size][k] for k in scores}
        mean, lo, hi = paired_bootstrap(diff, 10_000, seed=0)
        per_buyer = "  ".join(
            "{}: {:+.3f} [{:+.3f}, {:+.3f}]".format(b, *paired_bootstrap(
                {k: v for k, v in diff.items() if k[2] == b}, 10_000, seed=0))
            for b in study.protocol.buyers.evaluation)
        print(f"{name:>18} {step:>5} {np.mean(list(bases[arm.size].values())):7.3f} "
              f"{np.mean(list(scores.values())):7.3f} {mean:+7.3f} [{lo:+.3f}, {hi:+.3f}]  {per_buyer}",
              flush=True)
        largest = max(study.protocol.sizes, key=lambda k: study.protocol.sizes[k].width)
        if arm.size == largest and arm.lr_multiple == 3 and lo > 0:
            failed = 0
    print("reference (paper App. D): 2.3B at 3x LR +0.037 [+0.017, +0.057]")
    return failed


def folder_digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``; the recorded MLflow run without its commit tags, and
    without its wall-clock sidecar (``mlflow_run.times.json``, dvcignored)."""
    digests = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "mlflow_run.times.json"):
        data = path.read_bytes()
        if path.name == "mlflow_run.json":
            record = json.loads(data)
            record["tags"] = {k: ("" if k in _COMMIT_TAGS else v) for k, v in record["tags"].items()}
            data = json.dumps(record, sort_keys=True).encode()
        digests[path.relative_to(folder).as_posix()] = hashlib.sha256(data).hexdigest()
    return digests


def timed_stage(tree: Path, study: str, run: str, size: str, work: Path) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds of ``train@run`` run from ``tree`` into ``work/run`` (CPU: the stage
    process and the rollout helpers it waited for), and its folder's digests."""
    shutil.rmtree(work / "run", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}"}
    init = [sys.executable, "pipelines/init.py", "--study", study, "--size", size,
            "--out", str(tree / "outputs" / study / "init" / size)]
    subprocess.run(init, cwd=tree, env=env, check=True, capture_output=True)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    cmd = [sys.executable, "pipelines/train.py", "--study", study, "--run", run, "--out", str(work / "run"),
           "--curves", str(work / "curves.csv")]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"train@{run} in {tree} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, folder_digests(work / "run")


def against(study, rev: str, run: str, rounds: int) -> int:
    """Alternating ``train@run`` stages here and at ``rev``; wall and CPU seconds, byte identity."""
    arm = next(a for a in study.arms.values() if a.run == run)
    if arm.parent_run:
        raise SystemExit(f"{run} continues {arm.parent_run}: time a fresh run")
    cpu: dict[str, list[float]] = {"ours": [], rev: []}
    wall: dict[str, list[float]] = {"ours": [], rev: []}
    digests: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"ours": REPO, rev: checkout(rev, Path(tmp))}
        for _ in range(rounds):
            for side, tree in trees.items():
                seconds, cpu_seconds, digest = timed_stage(tree, study.name, run, arm.size, Path(tmp))
                wall[side].append(seconds)
                cpu[side].append(cpu_seconds)
                if digests.setdefault(side, digest) != digest:
                    raise SystemExit(f"{side}: two runs of {run} differ (not deterministic)")
    same = digests["ours"] == digests[rev]
    print(f"train@{run}, {rounds} alternating rounds (CPU s = user + system of the stage process and its "
          f"rollout helpers; {rollout_processes()} rollout processes here, the knob's value on this machine)")
    for label, figures in (("wall s", wall), ("CPU s", cpu)):
        ours, theirs = statistics.median(figures["ours"]), statistics.median(figures[rev])
        print(f"ours ({REPO.name}): {ours:6.1f} {label}   runs: {', '.join(f'{c:.1f}' for c in figures['ours'])}")
        print(f"{rev:>{len(REPO.name) + 6}}: {theirs:6.1f} {label}   runs: {', '.join(f'{c:.1f}' for c in figures[rev])}")
        print(f"ratio {rev}/ours ({label}): {theirs / ours:.2f}x")
    # The MLflow record names the (temporary) run folder, so the printed digest leaves it out:
    # it then names the same weights and tables across invocations and machines' paths.
    weights_and_tables = {k: v for k, v in digests["ours"].items() if k != "mlflow_run.json"}
    combined = hashlib.sha256(json.dumps(weights_and_tables, sort_keys=True).encode()).hexdigest()
    print(f"run folder ({len(digests['ours'])} files): {'identical' if same else 'DIFFERENT'}; "
          f"digest of its checkpoints and CSVs {combined[:16]}")
    for name in sorted(set(digests["ours"]) | set(digests[rev])):
        if digests["ours"].get(name) != digests[rev].get(name):
            print(f"  differs: {name}")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", choices=["speed", "sweep", "demo", "check"])
    parser.add_argument("--study", default="demo")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench_training"))
    parser.add_argument("--against", metavar="REV", help="time train@RUN here beside git revision REV")
    parser.add_argument("--run", default="w64_shared_init", help="the run --against times")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of --against")
    parser.add_argument("--small", action="store_true", help="CI: speed on the smallest width only, in seconds")
    args = parser.parse_args()
    study = load_study(args.study)
    if args.against:
        return against(study, args.against, args.run, args.rounds)
    if args.small and args.mode not in (None, "speed"):
        parser.error("--small runs the speed mode only")
    if args.small:
        speed(study, small=True)
        return 0
    if args.mode is None:
        parser.error("a mode or --against REV is required")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.mode == "speed":
        speed(study)
    elif args.mode == "sweep":
        sweep(study, args.out)
    elif args.mode == "demo":
        demo(study, args.out)
    else:
        return check(study, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
