"""The text path's fast pieces against plain references: same bytes, same floats.

``benchmarks/engine.py --against REV`` checks whole transcripts against another revision; these
check each piece on open-ended inputs, so a shortcut that differs on some input fails here.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings, strategies as st

from negotiation.agents import action_json, offer_at_target, render_counter, term_phrase
from negotiation.agents._prose import humanize
from negotiation.env import INVALID, canonical_value, feature, load_domains, make_scenario, score_prefs, u_tilde
from car_prefs import CAR, SELLER

DOMAINS = list(load_domains().values())
scalars = st.one_of(st.text(max_size=12), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=True, allow_infinity=True), st.none(),
                    st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=10), scalars), max_size=6), st.sampled_from(["COUNTER", "ACCEPT", "é"]),
       st.text(max_size=8))
def test_action_json_is_json_dumps(terms, action, notes):
    payload = {"action": action, "terms": [{"name": n, "value": v} for n, v in terms], "notes": notes}
    assert action_json(action, terms, notes) == json.dumps(payload)


def _reference_phrase(domain, name, value):
    if not domain.has_term(name):
        return f"{humanize(name)} of {value}"
    term = domain.term(name)
    if term.kind == "continuous":
        unit = term.unit or ""
        if value == 1 and unit.endswith("s") and unit.isalpha():
            unit = unit[:-1]
        return f"{humanize(name)} at {value} {unit}"
    if term.kind == "binary":
        return f"{humanize(name)} included" if value is True else f"no {humanize(name)}"
    if isinstance(value, str) and value.casefold() == "none":
        return f"no {humanize(name)}"
    return f"the {value} {humanize(name)}"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DOMAINS), st.data())
def test_term_phrase_matches_the_plain_rules(domain, data):
    name = data.draw(st.sampled_from([*domain.term_names, "not_a_term"]))
    value = data.draw(st.one_of(scalars, st.sampled_from([1, 1.0, "None", "none", True, False])))
    assert term_phrase(domain, name, value) == _reference_phrase(domain, name, value)


def _reference_score(domain, prefs, ledger):
    """score_prefs as first written: ``feature`` per term, summed in domain order."""
    u = dist = integ = 0.0
    n_invalid = n_oor = 0
    for term in domain.terms:
        w, phi = prefs.weights[term.name], 0.0
        if term.name in ledger:
            phi, invalid, oor = feature(term, prefs.role, prefs.preferred.get(term.name), ledger[term.name])
            n_invalid += invalid
            n_oor += oor
        u += w * phi
        part = w * (phi + 1.0) / 2.0
        if term.is_continuous:
            dist += part
        else:
            integ += part
    n_off = sum(1 for name in ledger if not domain.has_term(name))
    return u, min(1.0, dist + integ), dist, integ, n_off, n_invalid, n_oor


def _ledgers(domain):
    values = {}
    for term in domain.terms:
        own = (st.floats(term.range[0] - 5, term.range[1] + 5) | st.integers(-10**400, 10**400) if term.is_continuous
               else st.sampled_from([*term.levels, "  " + str(term.levels[0]).upper() + " ", "nope"]))
        values[term.name] = own | scalars
    return st.fixed_dictionaries({}, optional={**values, "extra_term": scalars})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DOMAINS), st.integers(0, 2**31), st.sampled_from(["seller", "buyer"]), st.data())
def test_score_and_u_tilde_equal_the_plain_feature_sum(domain, seed, role, data):
    prefs = make_scenario(domain, seed).prefs(role)
    ledger = data.draw(_ledgers(domain))
    score = score_prefs(domain, prefs, ledger)
    got = (score.u, score.u_tilde, score.distributive, score.integrative, score.n_off_schema,
           score.n_invalid, score.n_out_of_range)
    assert got == _reference_score(domain, prefs, ledger)
    assert u_tilde(domain, prefs, ledger) == score.u_tilde  # from the memo (scalars)
    assert u_tilde(domain, prefs, ledger) == score.u_tilde  # and again


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DOMAINS), st.integers(0, 2**31), st.sampled_from(["seller", "buyer"]), st.data())
def test_memoized_scores_never_mix_up_equal_values_of_other_types(domain, seed, role, data):
    # True == 1 == 1.0 and 0.0 == -0.0 as keys; each ledger scores as the plain sum does.
    prefs = make_scenario(domain, seed).prefs(role)
    names = data.draw(st.lists(st.sampled_from(domain.term_names), min_size=1, max_size=3, unique=True))
    for values in data.draw(st.permutations([1, 1.0, True, 0, 0.0, -0.0, False])):
        ledger = {name: values for name in names}
        for _ in range(3):  # stored the first time, memo hits after
            score = score_prefs(domain, prefs, ledger)
            got = (score.u, score.u_tilde, score.distributive, score.integrative, score.n_off_schema,
                   score.n_invalid, score.n_out_of_range)
            assert repr(got) == repr(_reference_score(domain, prefs, ledger))


def _reference_offer(domain, prefs, target, asked):
    """offer_at_target as first written, from the public term_value and feature."""
    from negotiation.agents._offers import term_value

    role, offer = prefs.role, {}
    for t in domain.terms:
        offer[t.name] = term_value(t, role, 1.0) if t.is_continuous else prefs.preferred[t.name]
    u = 1.0
    for t in sorted(domain.terms, key=lambda t: (prefs.weights[t.name], t.name)):
        w = prefs.weights[t.name]
        if u - target <= 1e-12:
            break
        if t.is_continuous:
            value = asked.get(t.name)  # a finite number in float range, or -1
            phi_floor = feature(t, role, None, value)[0] if canonical_value(t, value) is not INVALID else -1.0
            drop = min(w * (1.0 - phi_floor) / 2.0, u - target)
            if w <= 0 or drop <= 0:
                continue
            offer[t.name] = term_value(t, role, 1.0 - 2.0 * drop / w)
            u -= drop
        elif t.name in asked and asked[t.name] != prefs.preferred[t.name] and u - w >= target - 1e-12:
            offer[t.name] = asked[t.name]
            u -= w
    return offer


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DOMAINS), st.integers(0, 2**31), st.sampled_from(["seller", "buyer"]),
       st.floats(0.0, 1.0), st.data())
def test_offer_at_target_equals_the_plain_construction(domain, seed, role, target, data):
    prefs = make_scenario(domain, seed).prefs(role)
    asked = data.draw(_ledgers(domain))
    expected = _typed(_reference_offer(domain, prefs, target, asked))
    for _ in range(3):  # stored the first time, memo hits after, where memoizable
        assert _typed(offer_at_target(domain, prefs, target, asked)) == expected


def _typed(offer):
    # repr tells apart what == does not (True and 1, -0.0 and 0.0) and JSON writes apart
    return [(name, type(value), repr(value)) for name, value in offer.items()]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.floats(0.0, 1.0), st.data())
def test_memoized_offers_never_mix_up_equal_keys_of_other_types(seed, target, data):
    # Values that compare equal across types, asked in turn: each offer is the one built afresh.
    prefs = make_scenario(CAR, seed).prefs("seller")
    name = data.draw(st.sampled_from(CAR.term_names))
    for value in data.draw(st.permutations([1, 1.0, True, 0, 0.0, -0.0, False, "1"])):
        asked = {name: value}
        for _ in range(3):
            assert _typed(offer_at_target(CAR, prefs, target, asked)) == _typed(_reference_offer(CAR, prefs, target, asked))


def test_offer_plans_follow_the_preferences_object():
    # Plans are cached by identity: a second scenario's preferences get their own plan.
    first = offer_at_target(CAR, SELLER, 0.7, {})
    other = make_scenario(CAR, 12345).seller
    assert offer_at_target(CAR, other, 0.7, {}) == _reference_offer(CAR, other, 0.7, {})
    assert offer_at_target(CAR, SELLER, 0.7, {}) == first


def _reference_counter(domain, role, terms, rng, opening, holding):
    """render_counter as first written: term_phrase per term and json.dumps of the action."""
    from negotiation.agents import _prose

    lead = _prose._OPEN[role][rng.integers(len(_prose._OPEN[role]))] + " " if opening or rng.random() < 0.3 else ""
    verbs = _prose._HOLD if holding else _prose._COUNTER_LEAD
    verb = verbs[rng.integers(len(verbs))]
    body = f"{verb} {_prose._join([term_phrase(domain, n, v) for n, v in terms])}."
    payload = {"action": "COUNTER", "terms": [{"name": n, "value": v} for n, v in terms], "notes": ""}
    return f"{lead}{body} {_prose._CLOSE[rng.integers(len(_prose._CLOSE))]}\n{json.dumps(payload)}"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DOMAINS), st.sampled_from(["seller", "buyer"]), st.integers(0, 2**32 - 1),
       st.booleans(), st.booleans(), st.data())
def test_render_counter_equals_phrases_and_json_dumps(domain, role, seed, opening, holding, data):
    
    names = st.sampled_from([*domain.term_names, "not_a_term"])
    equal_across_types = st.sampled_from([1, 1.0, True, 0, 0.0, -0.0, False, "1", "None", float("nan")])
    terms = data.draw(st.lists(st.tuples(names, scalars | equal_across_types), min_size=1, max_size=6))
    for _ in range(2):  # the second time from the memo, where keyed
        got = render_counter(domain, role, terms, np.random.default_rng([seed]), opening=opening, holding=holding)
        assert got == _reference_counter(domain, role, terms, np.random.default_rng([seed]), opening, holding)
