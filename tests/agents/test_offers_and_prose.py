"""Offer construction at a target Ũ and the templated prose that speaks it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.agents import action_json, offer_at_target, render_accept, render_counter, term_phrase
from negotiation.agents._offers import changed_terms, counterpart_levels, term_value
from negotiation.env import parse_message, score_prefs
from tests.agents.car_prefs import CAR, SELLER, SELLER_BEST, said


@pytest.mark.parametrize("name,role,phi,expected", [
    ("price", "seller", 1.0, 60), ("price", "seller", -1.0, 20), ("price", "seller", 0.0, 40),
    ("price", "buyer", 1.0, 20), ("price", "seller", 0.123, 42.5),  # 42.46 on a 0.1 grid
    ("delivery", "seller", 0.0, 15.5), ("trade_in_credit", "seller", -0.31, 5.24),
])
def test_term_value_inverts_the_feature_on_a_grid(name, role, phi, expected):
    value = term_value(CAR.term(name), role, phi)
    assert value == expected
    assert isinstance(value, int) == float(expected).is_integer()


def test_target_one_is_the_best_full_contract():
    offer = offer_at_target(CAR, SELLER, 1.0, {})
    assert offer == SELLER_BEST
    assert score_prefs(CAR, SELLER, offer).u_tilde == pytest.approx(1.0)


def test_least_important_continuous_term_is_conceded_first():
    # Ascending weights: color .02, accessories/model/service .05, payment .08, delivery .1 ...
    # Integrative terms nobody asked about are never given away, so delivery moves first:
    # Ũ drops by w Δφ / 2 = .1 * 1 / 2 at φ = 0, i.e. 15.5 days.
    offer = offer_at_target(CAR, SELLER, 0.95, {})
    assert offer == {**SELLER_BEST, "delivery": 15.5}
    assert score_prefs(CAR, SELLER, offer).u_tilde == pytest.approx(0.95)


def test_asked_levels_are_granted_when_cheap_and_asked_numbers_bound_concessions():
    offer = offer_at_target(CAR, SELLER, 0.9, {"model": "SUV"})
    assert offer == {**SELLER_BEST, "model": "SUV", "delivery": 15.5}
    bounded = offer_at_target(CAR, SELLER, 0.9, {"delivery": 20})
    assert bounded["delivery"] == 20  # never concede past what the counterpart asked for
    assert score_prefs(CAR, SELLER, bounded).u_tilde == pytest.approx(0.9, abs=1e-3)


def test_counterpart_levels_and_changed_terms():
    history = (said(1, "seller", {"price": 60}), said(2, "buyer", {"price": 30, "model": "SUV"}),
               said(3, "seller", {"price": 50, "model": "SUV"}), said(4, "buyer", {"price": 35, "model": "SUV"}))
    assert counterpart_levels(history, "seller") == {"price": 35, "model": "SUV"}
    assert changed_terms({"price": 50, "model": "SUV", "color": "Black"}, {"price": 50, "model": "Sedan"}) == [
        ("model", "SUV"), ("color", "Black")]


def test_term_phrases():
    assert term_phrase(CAR, "price", 42) == "price at 42 $k"
    assert term_phrase(CAR, "warranty_months", 6) == "warranty months at 6 months"
    assert term_phrase(CAR, "model", "Sedan") == "the Sedan model"
    assert term_phrase(CAR, "accessories", True) == "accessories included"
    assert term_phrase(CAR, "accessories", False) == "no accessories"
    assert term_phrase(CAR, "sunroof", "yes") == "sunroof of yes"


def test_rendered_counter_parses_back_and_speaks_every_term():
    terms = [("price", 42.5), ("model", "Sedan"), ("accessories", True)]
    text = render_counter(CAR, "seller", terms, np.random.default_rng(3), opening=True)
    parsed = parse_message(text)
    assert parsed.ok and parsed.action == "COUNTER" and parsed.terms == tuple(terms)
    for name, value in terms:
        assert term_phrase(CAR, name, value) in parsed.prose
    assert 2 <= len(re.split(r"(?<=[.!?])\s+", parsed.prose)) <= 3  # two or three sentences
    assert not any(parsed.flags.values())


def test_prose_is_seeded_and_varied():
    terms = [("price", 50)]
    texts = {render_counter(CAR, "buyer", terms, np.random.default_rng(s), opening=False) for s in range(30)}
    assert len(texts) > 5
    again = render_counter(CAR, "buyer", terms, np.random.default_rng(7), opening=False)
    assert again == render_counter(CAR, "buyer", terms, np.random.default_rng(7), opening=False)


def test_accept_and_action_json():
    accept = parse_message(render_accept(np.random.default_rng(0)))
    assert (accept.ok, accept.action, accept.terms) == (True, "ACCEPT", ())
    assert action_json("COUNTER", [("price", 40)], "n") == (
        '{"action": "COUNTER", "terms": [{"name": "price", "value": 40}], "notes": "n"}')


def _plain_counterpart_levels(history, role):
    """The plain rule: every ledger of the history reread, latest counterpart change wins."""
    levels, before = {}, {}
    for msg in history:
        if msg.role != role:
            for name, value in msg.ledger_after.items():
                if name not in before or before[name] != value:
                    levels[name] = value
        before = msg.ledger_after
    return levels


ledgers = st.dictionaries(st.sampled_from(["price", "model", "delivery", "color"]),
                          st.one_of(st.integers(0, 3), st.sampled_from([1.0, True, "SUV", "suv"])), max_size=4)
histories = st.lists(st.tuples(st.sampled_from(["seller", "buyer"]), ledgers), max_size=8)


@settings(max_examples=300, deadline=None)
@given(trunk=histories, branches=st.lists(histories, min_size=1, max_size=3), role=st.sampled_from(["seller", "buyer"]))
def test_counterpart_levels_resumed_equal_the_full_rescan(trunk, branches, role):
    # Episodes that share their first messages (as views of one episode do, turn after turn)
    # or only equal ones, asked in interleaved order: every answer is the plain rescan's.
    shared = [said(i + 1, r, ledger) for i, (r, ledger) in enumerate(trunk)]
    for branch in branches:
        history = list(shared)
        for k, (r, ledger) in enumerate(branch):
            history.append(said(len(shared) + k + 1, r, ledger))
            for view_history in (tuple(history), tuple(history[:len(shared)]), tuple(history[:1])):
                # repr: the same values of the same types in the same order (1 == 1.0 == True)
                assert repr(counterpart_levels(view_history, role)) == repr(
                    _plain_counterpart_levels(view_history, role))
