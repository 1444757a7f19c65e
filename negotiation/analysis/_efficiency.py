"""Scenarios as bargaining problems, and each deal's distance to the frontier and Nash point."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from negotiation.analysis._bargaining import ScenarioFrontier, max_welfare, nash_point, signed_distance
from negotiation.analysis._errors import FrontierError
from negotiation.analysis._frontier import Allocation, Frontier, Problem, pareto_frontier


@dataclass(frozen=True)
class ScenarioProblem:
    """A scenario's bargaining problem and how to turn an allocation into a ledger."""

    problem: Problem
    fixed: dict[str, Any]
    """Term -> value for terms without conflict (set the way that pays both most)."""
    transfer_terms: tuple[tuple[str, float, float, bool], ...]
    """(name, lo, hi, seller prefers high) per transfer, in problem order."""
    choice_terms: tuple[tuple[str, Any, Any], ...]
    """(name, seller's level, buyer's level) per choice, in problem order."""
    option_terms: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """(name, the levels behind ``Problem.options``' rows) per options term."""

    def contract(self, allocation: Allocation) -> dict[str, Any]:
        """The full contract (every term set) behind ``allocation``."""
        ledger = dict(self.fixed)
        for (name, lo, hi, seller_high), share in zip(self.transfer_terms, allocation.seller_shares):
            ledger[name] = lo + share * (hi - lo) if seller_high else hi - share * (hi - lo)
        for (name, seller_level, buyer_level), seller_wins in zip(self.choice_terms, allocation.seller_choices):
            ledger[name] = seller_level if seller_wins else buyer_level
        for (name, levels), pick in zip(self.option_terms, allocation.option_picks):
            ledger[name] = levels[pick]
        return ledger


def _continuous(term, scenario, w_s: float, w_b: float) -> tuple[str, Any]:
    """A transfer when the parties pull the range opposite ways (always, on a drawn domain),
    else a constant at the end that pays; each party's direction comes from ``prefers_high``."""
    from negotiation.env import prefers_high

    lo, hi = term.range
    seller_high = prefers_high(scenario.seller, term)
    if seller_high == prefers_high(scenario.buyer, term) and w_s > 0 and w_b > 0:
        return "fixed", (hi if seller_high else lo, (w_s, w_b))  # a profiled domain's shared wish
    if w_s > 0 and w_b > 0:
        return "transfer", (term.name, lo, hi, seller_high)
    # One side does not care: hand the whole term to the other (it pays w or nothing).
    to_seller = w_b == 0
    return "fixed", (hi if to_seller == seller_high else lo, (w_s if to_seller else 0.0, 0.0 if to_seller else w_b))


def _levels(scenario, term, w_s: float, w_b: float) -> tuple[str, Any]:
    """An integrative term as a constant or a two-way choice between the parties' best levels,
    valued by ``evaluation`` (on a drawn domain: 1 at one's preferred level, 0 elsewhere). The
    loser of a choice keeps ``w e`` of the winner's level as a constant. A profiled term with a
    third level neither best level dominates is an options term: its undominated levels."""
    from negotiation.env import evaluation

    seller, buyer, where = scenario.seller, scenario.buyer, f"{scenario.domain.name}#{scenario.seed}"
    level_s, level_b = seller.preferred.get(term.name), buyer.preferred.get(term.name)
    if level_s is None or level_b is None:
        raise FrontierError(where, term.name, "no preferred level drawn")
    base = (w_s * evaluation(seller, term, level_b), w_b * evaluation(buyer, term, level_s))
    gain = (w_s * evaluation(seller, term, level_s) - base[0], w_b * evaluation(buyer, term, level_b) - base[1])
    if level_s == level_b or gain[0] <= 0 or gain[1] <= 0:
        seller_gets = level_s == level_b or gain[1] <= 0
        level = level_s if seller_gets else level_b
        return "fixed", (level, (w_s * evaluation(seller, term, level), w_b * evaluation(buyer, term, level)))
    values = {level: (w_s * evaluation(seller, term, level), w_b * evaluation(buyer, term, level))
              for level in term.levels}
    if any(s > base[0] and b > base[1] for level, (s, b) in values.items() if level not in (level_s, level_b)):
        rows = np.array(list(values.values()), dtype=float)
        levels = tuple(values)
        keep = [i for i in range(len(rows)) if not any((rows[j] >= rows[i]).all() and (rows[j] > rows[i]).any()
                                                       for j in range(len(rows)))]
        return "options", (rows[keep], (term.name, tuple(levels[i] for i in keep)))
    return "choice", (base, gain, (term.name, level_s, level_b))


def problem_from_scenario(scenario) -> ScenarioProblem:
    """Split a ``negotiation.env.Scenario`` into constants, transfers and choices."""
    seller, buyer = scenario.seller, scenario.buyer
    constant = np.zeros(2)
    fixed, transfers, transfer_terms, choices, choice_terms = {}, [], [], [], []
    options, option_terms = [], []
    for term in scenario.domain.terms:
        w_s, w_b = float(seller.weights[term.name]), float(buyer.weights[term.name])
        kind, payload = (_continuous(term, scenario, w_s, w_b) if term.is_continuous
                         else _levels(scenario, term, w_s, w_b))
        if kind == "transfer":
            transfers.append((w_s, w_b))
            transfer_terms.append(payload)
        elif kind == "fixed":
            fixed[term.name], gain = payload
            constant += gain
        elif kind == "options":
            options.append(payload[0])
            option_terms.append(payload[1])
        else:
            base, gain, names = payload
            constant += base
            choices.append(gain)
            choice_terms.append(names)
    problem = Problem(constant, np.array(transfers, dtype=float).reshape(-1, 2),
                      np.array(choices, dtype=float).reshape(-1, 2), tuple(options))
    return ScenarioProblem(problem, fixed, tuple(transfer_terms), tuple(choice_terms), tuple(option_terms))


@dataclass(frozen=True)
class ScenarioSolution:
    """Frontier, Nash point and maximum welfare of one scenario."""

    frontier: Frontier
    nash: np.ndarray
    nash_contract: dict[str, Any]
    max_welfare: float

    def summary(self, domain: str, seed: int) -> ScenarioFrontier:
        return ScenarioFrontier(
            domain=domain, seed=seed, pareto=[tuple(map(float, v)) for v in self.frontier.vertices],
            nash=(float(self.nash[0]), float(self.nash[1])), nash_contract=self.nash_contract,
            max_welfare=self.max_welfare,
        )


def solve_scenario(scenario) -> ScenarioSolution:
    """The exact frontier, Nash point (with a contract reaching it) and maximum welfare."""
    mapped = problem_from_scenario(scenario)
    frontier = pareto_frontier(mapped.problem)
    nash, allocation = nash_point(frontier)
    return ScenarioSolution(frontier, nash, mapped.contract(allocation), max_welfare(mapped.problem))


def solve_scenarios(keys: Iterable[tuple[str, int]], alpha: float) -> dict[tuple[str, int], ScenarioSolution]:
    """Solutions for every (domain, seed), each scenario built once through the environment
    with the study's Dirichlet concentration ``alpha``."""
    from negotiation.env import load_domain, make_scenario

    domains: dict[str, Any] = {}
    solutions = {}
    for domain, seed in sorted(set(keys)):
        if domain not in domains:
            domains[domain] = load_domain(domain)
        solutions[(domain, int(seed))] = solve_scenario(make_scenario(domains[domain], int(seed), alpha))
    return solutions


def deal_efficiency(episodes: pd.DataFrame, solutions: dict[tuple[str, int], ScenarioSolution]) -> pd.DataFrame:
    """Per episode: ``frontier_distance`` (signed, + inside), ``nash_distance`` and
    ``welfare_share`` (joint Ũ over the scenario's maximum); NaN on no-deals."""
    out = np.full((len(episodes), 3), np.nan)
    deals = np.flatnonzero(episodes["deal"].astype(bool).to_numpy())
    points = episodes[["seller_u", "buyer_u"]].to_numpy(dtype=float)[deals]
    groups = pd.DataFrame({"domain": episodes["domain"].to_numpy()[deals],
                           "seed": episodes["seed"].to_numpy()[deals]}).groupby(["domain", "seed"]).indices
    for (domain, seed), members in groups.items():
        key = (domain, int(seed))
        if key not in solutions:
            raise FrontierError("episodes", "domain,seed", f"no frontier for scenario {key!r}")
        solution, mine = solutions[key], points[members]
        rows = deals[members]
        out[rows, 0] = signed_distance(solution.frontier, mine)
        out[rows, 1] = np.linalg.norm(mine - solution.nash, axis=1)
        out[rows, 2] = mine.sum(axis=1) / solution.max_welfare
    return pd.DataFrame(out, index=episodes.index, columns=["frontier_distance", "nash_distance", "welfare_share"])
