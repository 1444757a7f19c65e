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
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable

import numpy as np

from negotiation.agents import make_agent
from negotiation.cli import dirichlet_alpha_for, env_config_for
from negotiation.env import Domain, EnvConfig, Scenario, load_domain, make_scenario, run_episode


def episodes_per_second(play: Callable[[int], bool], seconds: float, min_episodes: int) -> tuple[float, int, int]:
    """``(rate, episodes, deals)`` of ``play(i) -> deal`` run for ``seconds`` (at least ``min_episodes``)."""
    n = deals = 0
    start = time.perf_counter()
    while n < min_episodes or time.perf_counter() - start < seconds:
        deals += play(n)
        n += 1
    return n / (time.perf_counter() - start), n, deals


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
    args = parser.parse_args(argv)
    config = env_config_for(args.study, "evaluation")
    scenario = make_scenario(load_domain("used_car"), args.seed, dirichlet_alpha_for(args.study))
    try:
        negmas_play, n_outcomes = negmas(scenario, config, args.levels)
    except ImportError as exc:
        print(f"NegMAS is missing ({exc.name}); install the benchmark extra: pip install -e .[bench]",
              file=sys.stderr)
        return 2
    our_rate, our_n, our_deals = episodes_per_second(ours(scenario, config), args.seconds, args.min_episodes)
    nm_rate, nm_n, nm_deals = episodes_per_second(negmas_play, args.seconds, args.min_episodes)
    ratio = our_rate / nm_rate
    print(f"used_car seed {args.seed}, T = {config.max_rounds} rounds (protocol {args.study})")
    print(f"ours   text protocol, scripted boulware vs conceder: {our_rate:10.1f} episodes/s "
          f"({our_n} episodes, {our_deals} deals)")
    print(f"negmas SAO, BoulwareTB vs ConcederTB, {args.levels} levels/continuous term, "
          f"{n_outcomes:,} outcomes: {nm_rate:10.2f} episodes/s ({nm_n} episodes, {nm_deals} deals)")
    print(f"ratio ours/negmas: {ratio:.1f}x (required >= {args.min_ratio:g}x)")
    return 0 if ratio >= args.min_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
