"""Utility and normalization on the toy domain, by hand (weights in toy_env's docstring)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env import INVALID, canonical_value, feature, score_ledger, score_prefs
from tests.env.toy_env import make_toy, make_toy_domain

TOY = make_toy(make_toy_domain())  # module-level: hypothesis reuses it across examples


def test_best_and_worst_full_contracts_are_one_and_zero(toy):
    best = {"price": 100, "days": 10, "volume": 10, "color": "Blue", "size": "M",
            "extras": True, "support": False}
    worst = {"price": 0, "days": 30, "volume": 0, "color": "Red", "size": "S",
             "extras": False, "support": True}
    assert score_ledger(toy, "seller", best).u == pytest.approx(1.0)
    assert score_ledger(toy, "seller", best).u_tilde == pytest.approx(1.0)
    assert score_ledger(toy, "seller", worst).u == pytest.approx(-1.0)
    assert score_ledger(toy, "seller", worst).u_tilde == pytest.approx(0.0)


def test_partial_ledger_by_hand(toy):
    ledger = {"price": 75, "days": 15, "color": "Green", "extras": True}
    s = score_ledger(toy, "seller", ledger)
    # seller φ: price 2*.75-1 = .5; days buyer-high: -(2*.25-1) = .5; color -1; extras +1
    # U = .4*.5 + .1*.5 + .2*(-1) + .05*1 = 0.1 -> Ũ = 0.55
    assert s.u == pytest.approx(0.1)
    assert s.u_tilde == pytest.approx(0.55)
    # distributive: .4*1.5/2 + .1*1.5/2 + volume unnamed .1/2 = .425
    # integrative: color 0 + size unnamed .05 + extras .05 + support unnamed .025 = .125
    assert s.distributive == pytest.approx(0.425)
    assert s.integrative == pytest.approx(0.125)
    b = score_ledger(toy, "buyer", ledger)
    # buyer φ: price -.5, days -.5, color -1 (prefers Blue), extras +1
    # U = .2*-.5 + .2*-.5 + .1*-1 + .1*1 = -0.2 -> Ũ = 0.4
    assert b.u == pytest.approx(-0.2) and b.u_tilde == pytest.approx(0.4)


def test_unnamed_terms_contribute_zero_and_half_their_weight(toy):
    empty = score_ledger(toy, "seller", {})
    assert (empty.u, empty.u_tilde) == (0.0, 0.5)
    only_price = score_ledger(toy, "seller", {"price": 0})
    # price at the seller's worst: U = -.4; the six unnamed terms add .6/2 to Ũ = 0.3
    assert only_price.u_tilde == pytest.approx(0.3)


def test_off_schema_names_are_kept_and_never_scored(toy):
    with_extra = score_ledger(toy, "seller", {"price": 75, "warranty": 3, "Price": 1})
    assert with_extra.u == pytest.approx(score_ledger(toy, "seller", {"price": 75}).u)
    assert with_extra.n_off_schema == 2 and with_extra.n_invalid == 0


@pytest.mark.parametrize("name,value", [
    ("color", "Purple"), ("color", 3), ("extras", "yes"), ("extras", 1), ("price", "75"),
    ("price", True), ("price", math.nan), ("price", math.inf), ("size", None), ("days", [12]),
])
def test_invalid_values_score_as_unnamed_and_are_counted(toy, name, value):
    s = score_ledger(toy, "seller", {name: value})
    assert (s.u, s.u_tilde, s.n_invalid, s.n_out_of_range) == (0.0, 0.5, 1, 0)


def test_out_of_range_numbers_are_clipped_and_counted(toy):
    s = score_ledger(toy, "seller", {"price": 150, "days": 5})
    # price clipped to 100 -> φ +1; days clipped to 10 (buyer-high) -> seller φ +1
    assert s.u == pytest.approx(0.5) and s.n_out_of_range == 2
    assert score_ledger(toy, "seller", {"price": -3}).u == pytest.approx(-0.4)


def test_levels_match_case_and_space_insensitively(toy_domain):
    color = toy_domain.term("color")
    assert canonical_value(color, "  blue ") == "Blue"
    assert canonical_value(color, "bleu") is INVALID
    assert canonical_value(toy_domain.term("price"), 40) == 40.0
    assert feature(color, "seller", "Blue", "BLUE") == (1.0, False, False)
    assert feature(toy_domain.term("days"), "seller", None, 25) == (-0.5, False, False)


def test_normalization_matches_brute_force_over_full_contracts(toy):
    """Ũ = (U - Umin)/(Umax - Umin) with Umin, Umax found by enumerating full contracts."""
    domain = toy.domain
    grids = [t.range if t.is_continuous else t.levels for t in domain.terms]
    for role in ("seller", "buyer"):
        us = [score_ledger(toy, role, dict(zip(domain.term_names, combo))).u
              for combo in itertools.product(*grids)]
        lo, hi = min(us), max(us)
        ledger = {"price": 30, "size": "L", "support": True}
        expect = (score_ledger(toy, role, ledger).u - lo) / (hi - lo)
        assert score_ledger(toy, role, ledger).u_tilde == pytest.approx(expect)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.sampled_from(["Red", "blue", "M", "l"]), st.lists(st.integers(), max_size=2))


@settings(max_examples=200, deadline=None)
@given(ledger=st.dictionaries(
    st.one_of(st.sampled_from(["price", "days", "volume", "color", "size", "extras", "support"]),
              st.text(max_size=6)), _VALUES, max_size=10))
def test_u_tilde_in_unit_interval_for_any_ledger(ledger):
    toy = TOY
    for role in ("seller", "buyer"):
        s = score_prefs(toy.domain, toy.prefs(role), ledger)
        assert 0.0 <= s.u_tilde <= 1.0 + 1e-12
        assert s.distributive + s.integrative == pytest.approx(s.u_tilde)
        named = sum(1 for k in ledger if toy.domain.has_term(k))
        assert s.n_off_schema == len(ledger) - named
        assert s.n_invalid + s.n_out_of_range <= named


def _plain_term_issues(domain, terms):
    """The engine's count as first written: canonical_value per term, then the range."""
    off = inv = oor = 0
    for name, value in terms:
        if not domain.has_term(name):
            off += 1
            continue
        term = domain.term(name)
        canon = canonical_value(term, value)
        if canon is INVALID:
            inv += 1
        elif term.is_continuous and not term.range[0] <= canon <= term.range[1]:
            oor += 1
    return off, inv, oor


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(
    st.one_of(st.sampled_from(["price", "days", "volume", "color", "size", "extras", "support"]), st.text(max_size=6)),
    st.one_of(_VALUES, st.integers(-10**400, 10**400), st.sampled_from([True, False, 1, 0, 1.0, -0.0, " Red ", "RED"]))),
    max_size=10))
def test_term_issues_equal_canonical_value_per_term(terms):
    from negotiation.env._utility import term_issues

    assert term_issues(TOY.domain, terms) == _plain_term_issues(TOY.domain, terms)
