"""ANAC buyers (``negmas:<Name>``) beside a scripted buyer: episodes/s, deals and error rows.

Each buyer plays ``--episodes`` episodes against ``--seller`` over the study's evaluated domains
and evaluation seeds (domain-major within each seed), under the study's evaluation ``EnvConfig``,
through the evaluation harness's ``run_cell`` (so a failing agent is an error row, as in a cell,
and agents get the study's settings and lifecycle through ``agent_factory`` and one
``AgentPool``). ``--concurrency`` episodes are in flight, as ``nego evaluate`` plays them: an
``hf:`` seller's turns of those episodes are generated together in one batch (its
``GenerationQueue``); scripted and ANAC agents answer at once, so for them it changes little.
The seller is loaded, started and warmed by one untimed episode before any clock runs. The rate is wall-clock episodes/s of one
process; an ANAC agent's episode starts a fresh negotiator that builds its own view of the
outcome space (``--levels`` values per continuous term), which is most of its cost against a
scripted seller. Usage::

    python benchmarks/anac.py [--agents AgentK,HardHeaded,Atlas3|all [--every 4]] [--episodes 50] [--levels 5]
        [--seller scripted:boulware | hf:outputs/lm/init/lm_xs] [--study lm] [--concurrency 16]
        [--json figures.json]

``--study`` defaults to the study that built an ``hf:`` seller's checkpoint (as ``nego play``),
else ``demo``; it gives the domains, seeds, environment and the seller's sampling (token cap).
``--small`` (CI) plays 2 episodes each of one ANAC agent and the scripted buyer at ``--levels 2``.
Exit status 1 when any episode is an error row (each is printed with its reason).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from negotiation.agents import RetryPolicy, anac_classes
from negotiation.cli import checkpoint_study, dirichlet_alpha_for, env_config_for
from negotiation.evaluation import AgentPool, CellSpec, agent_factory, run_cell
from negotiation.study import load_study

DEFAULT_AGENTS = "AgentK,HardHeaded,CUHKAgent,Atlas3,AgentGG"


def keys(study: str, n: int) -> list[tuple[str, int]]:
    """The first ``n`` (domain, seed) pairs from the start of the study's evaluation block, seed-major.

    Seeds run on past the block's end when ``n`` asks for more (the lm study's block holds 2 seeds
    per domain, 18 pairs): a benchmark needs scenarios, not the evaluation's own set, and stores nothing."""
    protocol = load_study(study).protocol
    domains = list(protocol.domains.training) + list(protocol.domains.held_out)
    start = protocol.seeds.evaluation.start
    return [(domains[i % len(domains)], start + i // len(domains)) for i in range(n)]


class MemoryStore:
    """The two calls ``run_cell`` makes of a ``ResultsStore``, in memory: ``plan`` runs exactly the
    benchmark's pairs (a cell is a full domains x seeds product; keys outside the pairs count as
    done) and ``write`` keeps the rows, so no shard file is written inside the timed loop."""

    def __init__(self, pairs: list[tuple[str, int]]):
        self.wanted = set(pairs)
        self.rows: list[dict[str, Any]] = []

    def plan(self, keys: list[tuple], *, retry_errors: bool) -> tuple[list[tuple[tuple, int]], dict[str, int]]:
        todo = [(key, 1) for key in keys if (key[1], key[2]) in self.wanted]
        return todo, {"done": len(keys) - len(todo), "errors_kept": 0, "errors_retried": 0, "new": len(todo)}

    def write(self, key: tuple, attempt: int, episode: dict[str, Any], turns: list[dict[str, Any]]) -> None:
        self.rows.append(episode)


def bench_cell(buyer_spec: str, args: argparse.Namespace, pairs: list[tuple[str, int]]) -> CellSpec:
    """The cell of one buyer against the seller over the pairs' domains and seeds."""
    return CellSpec(study=args.study, arm="bench", seller=args.seller, buyers={"b": buyer_spec},
                    domains=tuple(dict.fromkeys(d for d, _ in pairs)), seeds=tuple(dict.fromkeys(s for _, s in pairs)),
                    dirichlet_alpha=dirichlet_alpha_for(args.study))


async def play(buyer_spec: str, args: argparse.Namespace, pairs: list[tuple[str, int]], pool: AgentPool) -> dict:
    """Play ``buyer_spec`` on ``pairs`` against the pool's seller; its rate, deals and error rows."""
    store = MemoryStore(pairs)
    await pool.get(buyer_spec, "buyer")  # built (and NegMAS imported) before the clock, as the seller is
    start = time.perf_counter()
    await run_cell(bench_cell(buyer_spec, args, pairs), store, env_config_for(args.study, "evaluation"), pool,  # type: ignore[arg-type]
                   concurrency=args.concurrency)
    seconds = time.perf_counter() - start
    errors = [f"{r['domain']}/{r['seed']}: {r['error_class']}: {r['error_message']}"
              for r in store.rows if r["outcome"] == "error"]
    return {"spec": buyer_spec, "rate": len(store.rows) / seconds, "seconds": seconds, "episodes": len(store.rows),
            "deals": sum(r["outcome"] == "deal" for r in store.rows), "errors": errors}


def report(r: dict) -> None:
    """One buyer's line (as soon as it is played: a run over every agent takes many minutes)."""
    print(f"{r['spec']:<40} {r['rate']:8.2f} episodes/s ({r['episodes']} episodes, {r['deals']} deals, "
          f"{len(r['errors'])} error rows)", flush=True)
    for error in r["errors"]:
        print(f"    {error}", flush=True)


async def play_all(specs: list[str], args: argparse.Namespace, pairs: list[tuple[str, int]]) -> list[dict]:
    """Every buyer in turn against one seller, started once (an ``hf:`` seller loads its checkpoint)."""
    protocol = load_study(args.study).protocol
    factory = agent_factory(protocol, retry=RetryPolicy(), max_concurrency=args.concurrency)
    results = []
    async with AgentPool(factory) as pool:
        # one untimed episode first: an hf: seller's first forward passes (allocation) would
        # otherwise be charged to whichever buyer plays first, the baseline
        await play(args.baseline, args, pairs[:1], pool)
        for spec in specs:
            results.append(await play(spec, args, pairs, pool))
            report(results[-1])
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, with ``--small``'s settings and the default study applied."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="comma-separated ANAC agent names, or all")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--levels", type=int, default=5)
    parser.add_argument("--seller", default="scripted:boulware", help="a seller spec: scripted:..., hf:<model dir>")
    parser.add_argument("--baseline", default="scripted:titfortat", help="the scripted buyer beside them")
    parser.add_argument("--study", default=None,
                        help="the study (default: the one that built an hf: seller's checkpoint, else demo)")
    parser.add_argument("--every", type=int, default=1,
                        help="with --agents all: every n-th agent by name (a spread over the years in less time)")
    parser.add_argument("--concurrency", type=int, default=16, help="episodes in flight, as nego evaluate's")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--small", action="store_true", help="CI: 2 episodes of AgentK and the baseline, levels 2")
    args = parser.parse_args(argv)
    if args.small:
        args.agents, args.episodes, args.levels = "AgentK", 2, 2
    args.study = args.study or checkpoint_study((args.seller,)) or "demo"
    return args


def main() -> int:
    args = parse_args()
    names = sorted(anac_classes())[::args.every] if args.agents == "all" else args.agents.split(",")
    specs = [args.baseline, *(f"negmas:{name}?levels={args.levels}" for name in names)]
    results = asyncio.run(play_all(specs, args, keys(args.study, args.episodes)))
    failing = [r["spec"] for r in results if r["errors"]]
    print(f"{len(results) - 1 - len([f for f in failing if f.startswith('negmas:')])} of {len(results) - 1} "
          f"ANAC agents played every episode without an error row against {args.seller}")
    if args.json is not None:
        figures = {"seller": args.seller, "study": args.study, "levels": args.levels, "concurrency": args.concurrency,
                   "command": " ".join(sys.argv),
                   "episodes_per_buyer": args.episodes, "buyers": results}
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
