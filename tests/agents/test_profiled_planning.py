"""Profiled domains are planned with, not only scored: ``env.evaluation`` is the one valuation of
a term value both models answer (drawn: φ's ``(φ + 1) / 2``; profiled: the declared evaluations),
scripted personas reach deals on domains NegMAS generated, and the frontier maps a profiled term
exactly (a level between the parties' best ones is one of a term's options)."""

from __future__ import annotations

import copy
import itertools
import random
from pathlib import Path

import numpy as np
import pytest
import yaml

from negotiation.agents import make_agent
from negotiation.agents._offers import offer_at_target
from negotiation.analysis._efficiency import problem_from_scenario, solve_scenario
from negotiation.env import (EnvConfig, evaluation, feature, load_domain, load_domain_file, make_scenario,
                             prefers_high, run_episode, u_tilde)

ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)
PERSONAS = ("boulware", "conceder", "linear", "titfortat")


def _text(words: str) -> dict[str, str]:
    return {"seller": words, "buyer": words}


# Both parties want a high budget (the imported term's high_preferred_by names the seller only);
# "cake" lies between the parties' best foods for both of them.
SHARED = {
    "name": "shared_toy", "version": 1, "title": "Shared toy", "description": _text("A toy."),
    "terms": [
        {"name": "food", "kind": "categorical", "levels": ["chips", "nuts", "cake"], "description": _text("Food.")},
        {"name": "budget", "kind": "continuous", "range": [100, 500], "unit": "$", "high_preferred_by": "seller",
         "description": _text("Budget.")},
    ],
    "profiles": {
        "seller": {"weights": {"food": 2.0, "budget": 1.0}, "evaluations": {"food": {"chips": 0.0, "nuts": 1.0, "cake": 0.0}},
                   "ends": {"budget": [0.0, 1.0]}},
        "buyer": {"weights": {"food": 1.0, "budget": 1.0}, "evaluations": {"food": {"chips": 1.0, "nuts": 0.0, "cake": 0.2}},
                  "ends": {"budget": [0.0, 1.0]}},
    },
}


def _domain(tmp_path: Path, data: dict):
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_domain_file(path)


@pytest.mark.parametrize("name", ["used_car", "job_offer"])
def test_drawn_evaluation_is_the_feature_rescaled(name):
    domain = load_domain(name)
    for seed, term, role in itertools.product(range(3), domain.terms, ("seller", "buyer")):
        prefs = make_scenario(domain, seed).prefs(role)
        values = np.linspace(*term.range, 7) if term.is_continuous else term.levels
        for value in values:
            phi = feature(term, role, prefs.preferred.get(term.name), value)[0]
            assert evaluation(prefs, term, value) == pytest.approx((phi + 1) / 2, abs=1e-15)


def test_profiled_evaluations_sum_to_the_score_and_give_each_party_its_direction(tmp_path):
    domain = _domain(tmp_path, SHARED)
    scenario = make_scenario(domain, 0)
    budget = domain.term("budget")
    assert prefers_high(scenario.seller, budget) and prefers_high(scenario.buyer, budget)
    for role, food, money in itertools.product(("seller", "buyer"), ["chips", "nuts", "cake"], [100, 300, 500]):
        prefs, contract = scenario.prefs(role), {"food": food, "budget": money}
        total = sum(prefs.weights[t.name] * evaluation(prefs, t, contract[t.name]) for t in domain.terms)
        assert total == pytest.approx(u_tilde(domain, prefs, contract), abs=1e-12)
    best = offer_at_target(domain, scenario.buyer, 1.0, {})
    assert best == {"food": "chips", "budget": 500}  # the buyer's own best end, not the seller's opposite


def test_the_frontier_maps_shared_wishes_and_levels_between_the_best_ones(tmp_path):
    data = copy.deepcopy(SHARED)
    data["profiles"]["buyer"]["evaluations"]["food"]["cake"] = 0.0  # cake: dominated for both
    mapped = problem_from_scenario(make_scenario(_domain(tmp_path, data), 0))
    assert mapped.fixed == {"budget": 500} and len(mapped.problem.transfers) == 0
    assert mapped.choice_terms == (("food", "nuts", "chips"),) and mapped.option_terms == ()
    solution = solve_scenario(make_scenario(_domain(tmp_path, data), 0))
    assert solution.max_welfare == pytest.approx(1 / 3 + 1 / 2 + 2 / 3)  # budget to both, food to the seller
    data = copy.deepcopy(SHARED)
    data["name"], data["profiles"]["seller"]["evaluations"]["food"]["cake"] = "shared_toy2", 0.9
    scenario = make_scenario(_domain(tmp_path, data), 0)
    mapped = problem_from_scenario(scenario)
    assert mapped.choice_terms == () and mapped.option_terms == (("food", ("chips", "nuts", "cake")),)
    solution = solve_scenario(scenario)
    assert solution.max_welfare == pytest.approx(1 / 3 + 1 / 2 + 2 / 3 * 0.9 + 1 / 2 * 0.2)  # cake pays most
    assert solution.nash_contract["food"] == "cake"


negmas = pytest.importorskip("negmas")


def _generated(tmp_path: Path, seed: int, n_issues: int):
    from negmas.inout import Scenario as NegmasScenario
    from negmas.preferences.generators import generate_multi_issue_ufuns

    from negotiation.env import import_genius

    random.seed(seed)
    np.random.seed(seed)
    ufuns = generate_multi_issue_ufuns(n_issues, (2, 6), os_name=f"gen{seed}", ufun_names=("a", "b"),
                                       reserved_values=(0.0, 0.5))
    NegmasScenario(outcome_space=ufuns[0].outcome_space, ufuns=ufuns).to_genius_folder(tmp_path / f"gen{seed}")
    return load_domain_file(import_genius(tmp_path / f"gen{seed}", f"gen{seed}", tmp_path / "domains"))


def test_the_frontier_of_a_generated_domain_is_the_brute_force_one(tmp_path):
    """Every contract of a NegMAS-generated domain (all categorical, levels between the parties'
    best ones): the largest welfare and Nash product, and the Nash contract's utilities."""
    domain = _generated(tmp_path, 2, 5)
    scenario = make_scenario(domain, 0)
    solution = solve_scenario(scenario)
    grid = (dict(zip(domain.term_names, v)) for v in itertools.product(*(t.levels for t in domain.terms)))
    points = np.array([(u_tilde(domain, scenario.seller, c), u_tilde(domain, scenario.buyer, c)) for c in grid])
    assert solution.max_welfare == pytest.approx(points.sum(axis=1).max(), abs=1e-12)
    assert np.prod(solution.nash) == pytest.approx(points.prod(axis=1).max(), abs=1e-12)
    contract = solution.nash_contract
    assert (u_tilde(domain, scenario.seller, contract), u_tilde(domain, scenario.buyer, contract)) == pytest.approx(
        tuple(solution.nash), abs=1e-12)


def test_scripted_personas_reach_deals_on_domains_negmas_generated(tmp_path):
    """NegMAS's generator makes near zero-sum domains (no contract gives both parties much over
    0.5), so the personas play with floor 0.4; before they planned with their profiles, 7 of
    these 48 pairings ended in a deal (41 now; on shipped domains 0.99 at this floor)."""
    deals = games = 0
    for seed, n_issues in ((1, 3), (4, 4), (5, 6)):
        scenario = make_scenario(_generated(tmp_path, seed, n_issues), 0)
        for seller, buyer in itertools.product(PERSONAS, PERSONAS):
            episode = run_episode(scenario, make_agent(f"scripted:{seller}?floor=0.4", "seller"),
                                  make_agent(f"scripted:{buyer}?floor=0.4", "buyer"), ENV, sample_seed=0)
            deals, games = deals + bool(episode.deal), games + 1
    assert deals / games >= 0.7, (deals, games)
