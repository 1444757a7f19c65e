"""Scripted episodes per second: this engine's full text protocol beside NegMAS's SAO mechanism.

Ours: ``scripted:boulware`` seller against ``scripted:conceder`` buyer; every turn renders
prose and a JSON action, parses it, updates the ledger and records the turn. NegMAS (0.16,
the ``bench`` extra): ``BoulwareTBNegotiator`` against ``ConcederTBNegotiator`` in
``SAOMechanism`` with ``n_steps`` = T rounds, on the same used_car scenario (same weights and
preferred levels, the same feature map as linear-additive value functions), with every
continuous term discretized into ``--levels`` evenly spaced values. T comes from the study
protocol. Usage::

    python benchmarks/engine.py [--seed 5000053] [--levels 3] [--seconds 5] [--min-ratio 10]

Exit status 1 when ours is slower than ``--min-ratio`` times NegMAS, 2 when NegMAS is missing.

``--against REV`` instead compares this checkout's engine with the one at git revision ``REV``
(e.g. ``main`` before a change): both play the same scripted episodes in alternating runs
(ours, theirs, ours, ...; medians of CPU-time rates, so load from other processes on the machine
hits both alike), and both play a fixed set of transcripts (every domain, three seeds, five
seller and three buyer personas) whose episode and turn tables must be identical byte for byte.
Prints both rates, their ratio and the table digests; exit status 1 when the transcripts differ
or ours is below ``--min-rate`` episodes/s::

    python benchmarks/engine.py --against main --rounds 5 [--min-rate 1000] [--cpu 0]

``--small`` (CI) plays each side for 0.3 s and enforces no ratio; without NegMAS (not in the dev
profile) it prints our side alone.

``--cpu N`` pins this process and its workers to core ``N`` (what ``taskset -c N`` does), the
"one core" of the target.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from negotiation.agents import make_agent
from negotiation.cli import dirichlet_alpha_for, env_config_for
from negotiation.env import (Domain, EnvConfig, Scenario, episodes_to_frames, load_domain, load_domains,
                             make_scenario, run_episode)

REPO = Path(__file__).resolve().parents[1]
PERSONAS = ("scripted:boulware", "scripted:conceder", "scripted:titfortat", "scripted:fixed", "scripted:linear")


def episodes_per_second(play: Callable[[int], bool], seconds: float, min_episodes: int) -> tuple[float, int, int]:
    """``(rate, episodes, deals)`` of ``play(i) -> deal`` run for ``seconds`` (at least ``min_episodes``)."""
    n = deals = 0
    start = time.perf_counter()
    while n < min_episodes or time.perf_counter() - start < seconds:
        deals += play(n)
        n += 1
    return n / (time.perf_counter() - start), n, deals


def cpu_rate(play: Callable[[int], bool], seconds: float) -> float:
    """Episodes per CPU second of ``play`` over about ``seconds`` of CPU time."""
    n, start = 0, time.process_time()
    while n < 3 or time.process_time() - start < seconds:
        play(n)
        n += 1
    return n / (time.process_time() - start)


def transcript_digest(study: str) -> str:
    """SHA-256 of the episode and turn tables (CSV) of a fixed set of scripted episodes."""
    config = env_config_for(study, "evaluation")
    alpha = dirichlet_alpha_for(study)
    episodes = []
    for domain in load_domains().values():
        for seed in (1000, 1001, 1002):
            scenario = make_scenario(domain, seed, alpha)
            for seller in PERSONAS:
                for buyer in PERSONAS[:3]:
                    episodes.append(run_episode(scenario, make_agent(seller, "seller"), make_agent(buyer, "buyer"),
                                                config, sample_seed=seed))
    ep_df, turn_df = episodes_to_frames(episodes)
    return hashlib.sha256(ep_df.to_csv(index=False).encode() + turn_df.to_csv(index=False).encode()).hexdigest()


def worker(args: argparse.Namespace) -> int:
    """One side of ``--against``: print its rates and its transcript digest as JSON."""
    config = env_config_for(args.study, "evaluation")
    scenario = make_scenario(load_domain("used_car"), args.seed, dirichlet_alpha_for(args.study))
    play = ours(scenario, config)
    rates = [cpu_rate(play, args.seconds) for _ in range(args.worker_rounds)]
    digest = transcript_digest(args.study) if args.digest else ""
    print(json.dumps({"rates": rates, "digest": digest}))
    return 0


def checkout(rev: str, into: Path) -> Path:
    """The files of git revision ``rev`` under ``into`` (no work tree or index touched)."""
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", rev], cwd=REPO, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run_side(tree: Path, args: argparse.Namespace, digest: bool) -> dict:
    """Run this script's worker against the package found in ``tree``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--study", args.study, "--seed",
           str(args.seed), "--seconds", str(args.seconds), "--worker-rounds", "1"] + (["--digest"] if digest else [])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark worker in {tree} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def against(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        theirs_tree = checkout(args.against, Path(tmp))
        ours_rates, theirs_rates, digests = [], [], {}
        for i in range(args.rounds):
            for name, tree, rates in (("ours", REPO, ours_rates), ("theirs", theirs_tree, theirs_rates)):
                result = run_side(tree, args, digest=i == 0)
                rates.extend(result["rates"])
                digests.setdefault(name, result["digest"])
    ours_rate, theirs_rate = statistics.median(ours_rates), statistics.median(theirs_rates)
    same = digests["ours"] == digests["theirs"]
    cores = sorted(os.sched_getaffinity(0))
    print(f"used_car seed {args.seed}, scripted boulware vs conceder, {args.rounds} alternating rounds of "
          f"{args.seconds:g} CPU s (medians of episodes per CPU second), on core(s) {cores}")
    print(f"ours ({REPO.name}): {ours_rate:8.1f} episodes/s   runs: {', '.join(f'{r:.0f}' for r in ours_rates)}")
    print(f"{args.against:>{len(REPO.name) + 6}}: {theirs_rate:8.1f} episodes/s   "
          f"runs: {', '.join(f'{r:.0f}' for r in theirs_rates)}")
    print(f"ratio ours/{args.against}: {ours_rate / theirs_rate:.2f}x; target >= {args.min_rate:g} episodes/s: "
          f"{'met' if ours_rate >= args.min_rate else 'missed'}")
    print(f"transcript tables: ours {digests['ours'][:16]}, {args.against} {digests['theirs'][:16]}: "
          f"{'identical' if same else 'DIFFERENT'}")
    return 0 if same and ours_rate >= args.min_rate else 1


def ours(scenario: Scenario, config: EnvConfig) -> Callable[[int], bool]:
    seller = make_agent("scripted:boulware", "seller")
    buyer = make_agent("scripted:conceder", "buyer")

    def play(i: int) -> bool:
        # A new sample seed each time varies the prose; the offers are the same every episode.
        return run_episode(scenario, seller, buyer, config, sample_seed=i).deal

    return play


def negmas_outcome_space(domain: Domain, levels: int):
    from negmas import make_issue, make_os

    issues = []
    for term in domain.terms:
        values = [float(v) for v in np.linspace(*term.range, levels)] if term.is_continuous else list(term.levels)
        issues.append(make_issue(values, term.name))
    return make_os(issues, name=domain.name)


def negmas_ufun(scenario: Scenario, role: str, outcome_space):
    """The scenario's utility for ``role``: U = Σ w_k φ_k with φ as in negotiation.env."""
    from negmas.preferences import AffineFun, LinearAdditiveUtilityFunction, TableFun

    prefs = scenario.prefs(role)
    values = {}
    for term in scenario.domain.terms:
        if term.is_continuous:
            lo, hi = term.range
            sign = 1.0 if term.high_preferred_by == role else -1.0
            values[term.name] = AffineFun(slope=sign * 2 / (hi - lo), bias=sign * (-2 * lo / (hi - lo) - 1))
        else:
            values[term.name] = TableFun({v: 1.0 if v == prefs.preferred[term.name] else -1.0 for v in term.levels})
    return LinearAdditiveUtilityFunction(values=values, weights=dict(prefs.weights),
                                         outcome_space=outcome_space, name=role)


def negmas(scenario: Scenario, config: EnvConfig, levels: int) -> tuple[Callable[[int], bool], int]:
    from negmas.sao import BoulwareTBNegotiator, ConcederTBNegotiator, SAOMechanism

    space = negmas_outcome_space(scenario.domain, levels)
    seller_u, buyer_u = negmas_ufun(scenario, "seller", space), negmas_ufun(scenario, "buyer", space)

    def play(i: int) -> bool:
        mechanism = SAOMechanism(outcome_space=space, n_steps=config.max_rounds)
        mechanism.add(BoulwareTBNegotiator(name="seller"), ufun=seller_u)  # the first added opens
        mechanism.add(ConcederTBNegotiator(name="buyer"), ufun=buyer_u)
        return mechanism.run().agreement is not None

    return play, int(space.cardinality)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default="demo", help="protocol whose environment supplies T")
    parser.add_argument("--seed", type=int, default=5_000_053, help="used_car scenario seed")
    parser.add_argument("--levels", type=int, default=3, help="NegMAS values per continuous term")
    parser.add_argument("--seconds", type=float, default=5.0, help="time budget per side")
    parser.add_argument("--min-episodes", type=int, default=3)
    parser.add_argument("--min-ratio", type=float, default=10.0)
    parser.add_argument("--against", metavar="REV", help="compare with the engine at this git revision")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs per side (--against)")
    parser.add_argument("--min-rate", type=float, default=1000.0, help="target episodes/s (--against)")
    parser.add_argument("--cpu", type=int, metavar="N", help="pin to this core (workers inherit it)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-rounds", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--small", action="store_true", help="CI: 0.3 s per side, no ratio enforced")
    args = parser.parse_args(argv)
    if args.small:
        args.seconds, args.min_ratio = 0.3, 0.0
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    if args.worker:
        return worker(args)
    if args.against:
        return against(args)
    config = env_config_for(args.study, "evaluation")
    scenario = make_scenario(load_domain("used_car"), args.seed, dirichlet_alpha_for(args.study))
    try:
        negmas_play, n_outcomes = negmas(scenario, config, args.levels)
    except ImportError as exc:
        print(f"NegMAS is missing ({exc.name}); install the benchmark extra: pip install -e .[bench]",
              file=sys.stderr)
        if not args.small:
            return 2
        negmas_play = None
    our_rate, our_n, our_deals = episodes_per_second(ours(scenario, config), args.seconds, args.min_episodes)
    print(f"used_car seed {args.seed}, T = {config.max_rounds} rounds (protocol {args.study})")
    print(f"ours   text protocol, scripted boulware vs conceder: {our_rate:10.1f} episodes/s "
          f"({our_n} episodes, {our_deals} deals)")
    if negmas_play is None:
        print("negmas SAO: not installed (the bench extra), no ratio")
        return 0
    nm_rate, nm_n, nm_deals = episodes_per_second(negmas_play, args.seconds, args.min_episodes)
    ratio = our_rate / nm_rate
    print(f"negmas SAO, BoulwareTB vs ConcederTB, {args.levels} levels/continuous term, "
          f"{n_outcomes:,} outcomes: {nm_rate:10.2f} episodes/s ({nm_n} episodes, {nm_deals} deals)")
    print(f"ratio ours/negmas: {ratio:.1f}x (required >= {args.min_ratio:g}x)")
    return 0 if ratio >= args.min_ratio else 1

if __name__ == "__main__":
    sys.exit(main())
