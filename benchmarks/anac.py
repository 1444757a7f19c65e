"""ANAC buyers (``negmas:<Name>``) beside a scripted buyer: episodes/s, deals and error rows.

Each buyer plays ``--episodes`` episodes against ``--seller`` over the study's evaluated domains
and evaluation seeds (domain-major within each seed), under the study's evaluation ``EnvConfig``,
through the evaluation harness's ``play_episode`` (so a failing agent is an error row, as in a
cell). The rate is wall-clock episodes/s of one process; an ANAC agent's episode starts a fresh
negotiator that builds its own view of the outcome space (``--levels`` values per continuous
term), which is most of its cost. Usage::

    python benchmarks/anac.py [--agents AgentK,HardHeaded,Atlas3|all] [--episodes 50] [--levels 5]

``--small`` (CI) plays 2 episodes each of one ANAC agent and the scripted buyer at ``--levels 2``.
Exit status 1 when any episode is an error row (each is printed with its reason).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from negotiation.agents import anac_classes, make_agent
from negotiation.cli import dirichlet_alpha_for, env_config_for
from negotiation.evaluation import CellSpec, play_episode
from negotiation.study import load_study

DEFAULT_AGENTS = "AgentK,HardHeaded,CUHKAgent,Atlas3,AgentGG"


def keys(study: str, n: int) -> list[tuple[str, int]]:
    """The first ``n`` (domain, seed) pairs of the study's evaluation block, seed-major."""
    protocol = load_study(study).protocol
    domains = list(protocol.domains.training) + list(protocol.domains.held_out)
    block = protocol.seeds.evaluation
    pairs = [(d, s) for s in range(block.start, block.stop) for d in domains]
    return pairs[:n]


def play(buyer_spec: str, args: argparse.Namespace, pairs: list[tuple[str, int]]) -> dict:
    """Play ``buyer_spec`` on ``pairs``; its rate, deals and error rows."""
    env = env_config_for(args.study, "evaluation")
    cell = CellSpec(study=args.study, arm="bench", seller=args.seller, buyers={"b": buyer_spec},
                    domains=tuple(dict.fromkeys(d for d, _ in pairs)), seeds=tuple(dict.fromkeys(s for _, s in pairs)),
                    dirichlet_alpha=dirichlet_alpha_for(args.study))
    seller, buyer = make_agent(args.seller, "seller"), make_agent(buyer_spec, "buyer")
    start = time.perf_counter()
    deals, errors = 0, []
    for domain, seed in pairs:
        row, _ = asyncio.run(play_episode(("bench", domain, seed, "b"), 0, cell, seller, buyer, env))
        deals += row["outcome"] == "deal"
        if row["outcome"] == "error":
            errors.append(f"{domain}/{seed}: {row['error_class']}: {row['error_message']}")
    seconds = time.perf_counter() - start
    return {"spec": buyer_spec, "rate": len(pairs) / seconds, "episodes": len(pairs), "deals": deals,
            "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="comma-separated ANAC agent names, or all")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--levels", type=int, default=5)
    parser.add_argument("--seller", default="scripted:boulware")
    parser.add_argument("--baseline", default="scripted:titfortat", help="the scripted buyer beside them")
    parser.add_argument("--study", default="demo")
    parser.add_argument("--small", action="store_true", help="CI: 2 episodes of AgentK and the baseline, levels 2")
    args = parser.parse_args()
    if args.small:
        args.agents, args.episodes, args.levels = "AgentK", 2, 2
    names = sorted(anac_classes()) if args.agents == "all" else args.agents.split(",")
    pairs = keys(args.study, args.episodes)
    results = []
    for spec in [args.baseline, *(f"negmas:{name}?levels={args.levels}" for name in names)]:
        r = play(spec, args, pairs)
        results.append(r)
        # each buyer's line as soon as it is played: a run over every agent takes many minutes
        print(f"{r['spec']:<40} {r['rate']:8.2f} episodes/s ({r['episodes']} episodes, {r['deals']} deals, "
              f"{len(r['errors'])} error rows)", flush=True)
        for error in r["errors"]:
            print(f"    {error}", flush=True)
    failing = [r["spec"] for r in results if r["errors"]]
    print(f"{len(results) - 1 - len([f for f in failing if f.startswith('negmas:')])} of {len(results) - 1} "
          f"ANAC agents played every episode without an error row against {args.seller}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
