"""The exact frontier: a hand-worked problem, brute force on random problems and on scenarios."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.analysis._bargaining import max_welfare, nash_point, signed_distance
from negotiation.analysis._efficiency import problem_from_scenario, solve_scenario
from negotiation.analysis._frontier import Problem, pareto_frontier
from negotiation.env import Domain, load_domain, make_scenario, score_ledger


def hand_problem():
    # transfers: (0.2, 0.1) ratio 0.5, (0.1, 0.3) ratio 3; choices (0.25, 0.05), (0.05, 0.25)
    return Problem(np.zeros(2), np.array([[0.2, 0.1], [0.1, 0.3]]), np.array([[0.25, 0.05], [0.05, 0.25]]))


def test_hand_worked_frontier():
    # Choice sums on the frontier: (0, .3), (.25, .25), (.3, 0); the zonotope chain is
    # (0, .4) -> (.2, .3) -> (.3, 0). Chain A from (0, .7) is overtaken at y = .65 by chain B
    # starting at (.25, .65) (horizontal connector); B ends at (.55, .25) above chain C
    # (.55, .15) (vertical connector); C runs on to (.6, 0).
    frontier = pareto_frontier(hand_problem())
    expected = [(0, 0.7), (0.1, 0.65), (0.25, 0.65), (0.45, 0.55), (0.55, 0.25), (0.55, 0.15), (0.6, 0.0)]
    assert frontier.vertices == pytest.approx(np.array(expected))
    assert frontier.segment_achievable.tolist() == [True, False, True, True, False, True]
    assert max_welfare(hand_problem()) == pytest.approx(0.2 + 0.3 + 0.25 + 0.25)


def test_hand_worked_nash():
    # On B's first piece y = .65 - .5 (x - .25): x·y peaks at x = .775 > .45, so the peak is at
    # the vertex (.45, .55) with product .2475; B's second piece y = .55 - 3 (x - .45) peaks at
    # x = (3·.45 + .55)/6 = .31667 < .45 -> also (.45, .55). Nothing else beats .2475.
    point, allocation = nash_point(pareto_frontier(hand_problem()))
    assert point == pytest.approx([0.45, 0.55])
    assert allocation.seller_choices == (True, False)
    assert allocation.seller_shares == pytest.approx((1.0, 0.0))


def test_two_contested_levels_leave_a_staircase():
    frontier = pareto_frontier(Problem(np.zeros(2), np.zeros((0, 2)), np.array([[0.5, 0.5]])))
    assert frontier.vertices.tolist() == [[0.0, 0.5], [0.0, 0.0], [0.5, 0.0]]
    assert frontier.achievable[1] is None
    # An unnamed contested term scores (.25, .25): beyond every full contract.
    assert signed_distance(frontier, np.array([[0.25, 0.25]]))[0] == pytest.approx(-0.25)
    assert signed_distance(frontier, np.array([[0.1, -0.2]]))[0] == pytest.approx(0.2)


def pareto_subset(points):
    """Grid points no other grid point dominates: if any point lay beyond the frontier, so
    would one of these (the free-disposal hull contains everything a point dominates)."""
    order = np.lexsort((-points[:, 1], -points[:, 0]))
    ys = points[order, 1]
    best_right = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    return points[order[ys > best_right]]


def outcomes(problem, grid):
    """Every contract with transfers on the grid and every choice outcome: (N, 2) utilities."""
    parts = [np.array([[w_s * s, w_b * (1 - s)] for s in grid]) for w_s, w_b in problem.transfers]
    parts += [np.array([[w_s, 0.0], [0.0, w_b], [0.0, 0.0]]) for w_s, w_b in problem.choices]
    total = problem.constant[None, :]
    for options in parts:
        total = (total[:, None, :] + options[None, :, :]).reshape(-1, 2)
    return total


def utility_of(problem, allocation):
    shares = np.array(allocation.seller_shares)
    wins = np.array(allocation.seller_choices, dtype=bool)
    seller = problem.constant[0] + (problem.transfers[:, 0] * shares).sum() + problem.choices[wins, 0].sum()
    buyer = problem.constant[1] + (problem.transfers[:, 1] * (1 - shares)).sum() + problem.choices[~wins, 1].sum()
    return np.array([seller, buyer])


weights = st.floats(0.01, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(weights, weights), min_size=0, max_size=3),
       st.lists(st.tuples(weights, weights), min_size=0, max_size=4),
       st.tuples(st.floats(0, 0.5), st.floats(0, 0.5)))
def test_no_enumerated_contract_lies_above_the_frontier(transfers, choices, constant):
    if not transfers and not choices:
        return
    problem = Problem(np.array(constant), np.array(transfers).reshape(-1, 2), np.array(choices).reshape(-1, 2))
    frontier = pareto_frontier(problem)
    points = outcomes(problem, np.linspace(0, 1, 11))
    assert signed_distance(frontier, pareto_subset(points)).min() >= -1e-9
    for vertex, allocation in zip(frontier.vertices, frontier.achievable):
        if allocation is not None:
            assert utility_of(problem, allocation) == pytest.approx(vertex, abs=1e-9)
    assert points.sum(axis=1).max() == pytest.approx(max_welfare(problem), abs=1e-9)
    nash, allocation = nash_point(frontier)
    assert utility_of(problem, allocation) == pytest.approx(nash, abs=1e-9)
    assert (points[:, 0] * points[:, 1]).max() <= nash.prod() + 1e-9


SMALL = {
    "name": "tiny_sale", "version": 1, "title": "Tiny sale",
    "description": {"seller": "You sell.", "buyer": "You buy."},
    "terms": [
        {"name": "price", "kind": "continuous", "range": [10, 20], "unit": "$k", "high_preferred_by": "seller",
         "description": {"seller": "p", "buyer": "p"}},
        {"name": "days", "kind": "continuous", "range": [0, 30], "unit": "days", "high_preferred_by": "buyer",
         "description": {"seller": "d", "buyer": "d"}},
        {"name": "fee", "kind": "continuous", "range": [0, 5], "unit": "$k", "high_preferred_by": "seller",
         "description": {"seller": "f", "buyer": "f"}},
        {"name": "color", "kind": "categorical", "levels": ["red", "blue", "green"],
         "description": {"seller": "c", "buyer": "c"}},
        {"name": "trim", "kind": "categorical", "levels": ["base", "sport", "lux"],
         "description": {"seller": "t", "buyer": "t"}},
        {"name": "mats", "kind": "binary", "description": {"seller": "m", "buyer": "m"}},
        {"name": "tow", "kind": "binary", "description": {"seller": "w", "buyer": "w"}},
    ],
}


def enumerate_contracts(domain, scenario, steps):
    """Utilities of every contract with continuous terms on a grid of ``steps`` values and
    integrative terms at every level, built term by term (checked against the env below)."""
    total = np.zeros((1, 2))
    for term in domain.terms:
        options = []
        values = np.linspace(*term.range, steps) if term.is_continuous else term.levels
        for value in values:
            options.append([score_ledger(scenario, role, {term.name: value}).u_tilde
                            - score_ledger(scenario, role, {}).u_tilde for role in ("seller", "buyer")])
        total = (total[:, None, :] + np.array(options)[None, :, :]).reshape(-1, 2)
    return total + np.array([score_ledger(scenario, role, {}).u_tilde for role in ("seller", "buyer")])


@pytest.mark.parametrize("seed", [5000000, 5000002])
def test_finely_discretized_small_scenario_has_nothing_above_the_frontier(seed):
    domain = Domain.model_validate(SMALL)
    scenario = make_scenario(domain, seed)
    solution = solve_scenario(scenario)
    points = enumerate_contracts(domain, scenario, 31)  # 31^3 x 3 x 3 x 2 x 2 = 1.07M contracts
    efficient = pareto_subset(points)
    full = {t.name: (t.range[0] if t.is_continuous else t.levels[0]) for t in domain.terms}
    # The term-by-term sum is the environment's utility (separability), checked on one contract.
    assert sum(score_ledger(scenario, "seller", {k: v}).u_tilde - 0.5 for k, v in full.items()) + 0.5 == \
        pytest.approx(score_ledger(scenario, "seller", full).u_tilde)
    assert signed_distance(solution.frontier, efficient).min() >= -1e-9
    assert points.sum(axis=1).max() == pytest.approx(solution.max_welfare, abs=1e-12)
    nash_scores = [score_ledger(scenario, role, solution.nash_contract).u_tilde for role in ("seller", "buyer")]
    assert nash_scores == pytest.approx(solution.nash.tolist(), abs=1e-12)
    assert (points[:, 0] * points[:, 1]).max() <= solution.nash.prod() + 1e-12


@pytest.mark.parametrize("name", ["used_car", "job_offer"])
def test_frontier_vertices_are_reached_by_contracts_the_environment_scores(name):
    scenario = make_scenario(load_domain(name), 5000003)
    mapped = problem_from_scenario(scenario)
    solution = solve_scenario(scenario)
    for vertex, allocation in zip(solution.frontier.vertices, solution.frontier.achievable):
        if allocation is None:
            continue
        ledger = mapped.contract(allocation)
        assert set(ledger) == set(scenario.domain.term_names)
        got = [score_ledger(scenario, role, ledger).u_tilde for role in ("seller", "buyer")]
        assert got == pytest.approx(vertex.tolist(), abs=1e-12)
    points = pareto_subset(enumerate_contracts(scenario.domain, scenario, 5))
    assert signed_distance(solution.frontier, points).min() >= -1e-9


def test_deal_efficiency_columns():
    from negotiation.analysis._efficiency import deal_efficiency, solve_scenarios

    from .frames import episode, frame

    solutions = solve_scenarios([("used_car", 5000001)], 0.3)
    solution = solutions[("used_car", 5000001)]
    nash_s, nash_b = solution.nash
    episodes = frame([
        episode("A", "used_car", 5000001, "x", seller_u=nash_s, buyer_u=nash_b),
        episode("A", "used_car", 5000001, "y", deal=False),
        episode("A", "used_car", 5000001, "z", seller_u=0.5, buyer_u=0.25),
    ])
    got = deal_efficiency(episodes, solutions)
    assert got.loc[0, "nash_distance"] == pytest.approx(0.0, abs=1e-12)
    assert got.loc[0, "frontier_distance"] == pytest.approx(0.0, abs=1e-9)
    assert got.loc[0, "welfare_share"] == pytest.approx((nash_s + nash_b) / solution.max_welfare)
    assert got.loc[1].isna().all()
    assert got.loc[2, "nash_distance"] == pytest.approx(np.hypot(0.5 - nash_s, 0.25 - nash_b))
    assert got.loc[2, "frontier_distance"] > 0


def test_no_conflict_is_a_single_point():
    problem = Problem(np.array([0.7, 0.6]), np.zeros((0, 2)), np.zeros((0, 2)))
    frontier = pareto_frontier(problem)
    assert frontier.vertices.tolist() == [[0.7, 0.6]]
    point, _ = nash_point(frontier)
    assert point.tolist() == [0.7, 0.6] and max_welfare(problem) == pytest.approx(1.3)
    assert signed_distance(frontier, np.array([[0.4, 0.2]]))[0] == pytest.approx(0.5)
