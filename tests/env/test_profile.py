"""Profiled domains (the Genius model, ``negotiation.env._profile``): schema errors name the file,
key and value; Ũ is the min-max normalised ``Σ w e`` (checked by brute force over every contract);
the shipped domains carry no profiles and draw as before."""

from __future__ import annotations

import copy
import itertools

import pytest
import yaml

from negotiation.env import load_domain_file, load_domains, make_scenario, score_prefs, u_tilde
from negotiation.errors import ConfigError


def _text(words: str) -> dict[str, str]:
    return {"seller": words, "buyer": words}


PROFILED = {
    "name": "genius_toy", "version": 1, "title": "Genius toy", "description": _text("A toy."),
    "terms": [
        {"name": "food", "kind": "categorical", "levels": ["chips", "nuts", "cake"], "description": _text("Food.")},
        {"name": "drinks", "kind": "categorical", "levels": ["beer", "tea"], "description": _text("Drinks.")},
        {"name": "budget", "kind": "continuous", "range": [100, 500], "unit": "$", "high_preferred_by": "seller",
         "description": _text("Budget.")},
    ],
    "profiles": {
        "seller": {"weights": {"food": 2.0, "drinks": 1.0, "budget": 3.0},
                   "evaluations": {"food": {"chips": 1.0, "nuts": 5.0, "cake": 3.0}, "drinks": {"beer": 2.0, "tea": 2.5}},
                   "ends": {"budget": [0.25, 1.0]}, "reservation": 0.3, "discount": 0.95},
        "buyer": {"weights": {"food": 0.2, "drinks": 0.3, "budget": 0.5},
                  "evaluations": {"food": {"chips": 0.0, "nuts": 0.0, "cake": 1.0}, "drinks": {"beer": 1.0, "tea": 0.0}},
                  "ends": {"budget": [1.0, 0.0]}},
    },
}


def _write(tmp_path, data) -> object:
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_utilities_are_the_normalised_genius_sums_over_every_contract(tmp_path):
    domain = load_domain_file(_write(tmp_path, PROFILED))
    scenario = make_scenario(domain, 11)
    ranges = {"budget": (100.0, 500.0)}
    grid = itertools.product(["chips", "nuts", "cake"], ["beer", "tea"], [100.0, 250.0, 500.0])
    contracts = [dict(zip(("food", "drinks", "budget"), c)) for c in grid]
    for role in ("seller", "buyer"):
        raws = [domain.profiles[role].raw_utility(c, ranges) for c in contracts]
        lo, hi = min(raws), max(raws)
        for contract, raw in zip(contracts, raws):
            score = score_prefs(domain, scenario.prefs(role), contract)
            assert score.u_tilde == pytest.approx((raw - lo) / (hi - lo), abs=1e-12)
            assert score.u == pytest.approx(2 * score.u_tilde - 1, abs=1e-12)
            assert score.distributive + score.integrative == pytest.approx(score.u_tilde, abs=1e-15)


def test_the_seed_draws_nothing_and_preferred_is_the_best_level(tmp_path):
    domain = load_domain_file(_write(tmp_path, PROFILED))
    a, b = make_scenario(domain, 0), make_scenario(domain, 99)
    assert a.seller == b.seller and a.buyer == b.buyer
    assert dict(a.seller.preferred) == {"food": "nuts", "drinks": "tea"}
    assert sum(a.seller.weights.values()) == pytest.approx(1.0)
    assert hash(domain) == hash(load_domain_file(_write(tmp_path, PROFILED)))


def test_unnamed_invalid_and_clipped_terms_follow_the_environment_rules(tmp_path):
    domain = load_domain_file(_write(tmp_path, PROFILED))
    buyer = make_scenario(domain, 0).buyer
    score = score_prefs(domain, buyer, {"food": "CAKE ", "drinks": 3, "budget": 50, "extra": 1})
    assert (score.n_off_schema, score.n_invalid, score.n_out_of_range) == (1, 1, 1)
    w = buyer.weights
    assert score.u_tilde == pytest.approx(w["food"] * 1.0 + w["drinks"] * 0.5 + w["budget"] * 1.0)
    assert u_tilde(domain, buyer, {}) == pytest.approx(0.5)


@pytest.mark.parametrize("edit,where", [
    (lambda d: d["profiles"]["seller"]["evaluations"]["food"].pop("cake"), "profiles: Value error, seller:"),
    (lambda d: d["profiles"]["buyer"]["weights"].update(budget=-1.0), "profiles.buyer"),
    (lambda d: d["profiles"].pop("buyer"), "profiles"),
    (lambda d: d["profiles"]["seller"].update(discount=1.5), "profiles.seller"),
    (lambda d: d["profiles"]["seller"].update(colour=1), "profiles.seller.colour"),
    (lambda d: d["profiles"]["buyer"].update(weights={"food": 1.0, "drinks": 0.0, "budget": 0.0},
                                             evaluations={"food": {"chips": 1, "nuts": 1, "cake": 1},
                                                          "drinks": {"beer": 0, "tea": 1}}), "profiles: Value error, buyer:"),
])
def test_a_bad_profile_names_file_key_and_value(tmp_path, edit, where):
    data = copy.deepcopy(PROFILED)
    edit(data)
    with pytest.raises(ConfigError) as info:
        load_domain_file(_write(tmp_path, data))
    message = str(info.value)
    assert f"genius_toy.yaml:{where}" in message and "(got" in message


def test_shipped_domains_have_no_profiles_and_draw_as_before():
    for domain in load_domains().values():
        assert domain.profiles is None
        scenario = make_scenario(domain, 3)
        assert scenario.seller.evaluations is None and scenario.buyer.evaluations is None
