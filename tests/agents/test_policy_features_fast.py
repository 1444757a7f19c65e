"""view_features (plans, memoized feature calls) against the plain reference: identical bits.

The inputs are open-ended: every domain, both roles, random histories whose ledgers hold
levels in other spellings, numbers in and out of range (``-0.0``, NaN, infinities, ints,
bools), strings, lists and off-schema names, so a memo that confused two values fails here.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from hypothesis import given, settings, strategies as st

from negotiation.agents._policy_features import FeatureBatch, view_features
from negotiation.env import Message, View, load_domains, make_scenario
from tests.agents.plain_policy_features import plain_view_features

DOMAINS = list(load_domains().values())
odd_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1, 1.0, True, False]),
                       st.integers(-10**6, 10**6), st.text(max_size=6), st.none(), st.lists(st.integers(), max_size=2))


@st.composite
def ledgers(draw, domain):
    ledger = {}
    for term in domain.terms:
        if not draw(st.booleans()):
            continue
        if term.is_continuous:
            lo, hi = term.range
            value = draw(st.one_of(st.floats(lo - 10, hi + 10), st.integers(int(lo) - 5, int(hi) + 5), odd_values))
        else:
            level = draw(st.sampled_from(list(term.levels)))
            spelled = st.sampled_from([level.upper(), f" {level.lower()} "]) if isinstance(level, str) else st.just(level)
            value = draw(st.one_of(st.just(level), spelled, odd_values))
        ledger[term.name] = value
    if draw(st.booleans()):
        ledger["not_a_term"] = draw(odd_values)
    return ledger


@st.composite
def views(draw):
    domain = draw(st.sampled_from(DOMAINS))
    scenario = make_scenario(domain, draw(st.integers(0, 10**6)))
    role = draw(st.sampled_from(["seller", "buyer"]))
    first = "seller"
    history = []
    ledger = {}
    for turn in range(1, draw(st.integers(1, 9))):
        speaker = first if turn % 2 else ("buyer" if first == "seller" else "seller")
        # A turn keeps most of the previous ledger, so changes between turns are partial.
        ledger = {**ledger, **draw(ledgers(domain))} if draw(st.booleans()) else draw(ledgers(domain))
        history.append(Message(turn, speaker, "...", MappingProxyType(dict(ledger)), None, None))
    return View(role, domain, scenario.prefs(role), len(history) + 1, draw(st.integers(1, 30)), tuple(history),
                MappingProxyType(dict(ledger)), "training", 0)


def _assert_same(a: FeatureBatch, b: FeatureBatch) -> None:
    for name in FeatureBatch.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name


@settings(max_examples=300, deadline=None)
@given(st.lists(views(), min_size=1, max_size=4))
def test_view_features_match_the_plain_reference(batch):
    _assert_same(view_features(batch), plain_view_features(batch))
    # Again: the second pass answers from the plans and memos the first one filled.
    _assert_same(view_features(batch), plain_view_features(batch))


def test_negative_zero_and_zero_share_a_memo_entry_safely():
    domain = DOMAINS[0]
    scenario = make_scenario(domain, 3)
    cont = [t.name for t in domain.terms if t.is_continuous]
    for first, second in ((0.0, -0.0), (-0.0, 0.0)):
        for value in (first, second):
            v = View("seller", domain, scenario.seller, 1, 24, (), MappingProxyType({n: value for n in cont}),
                     "training", 0)
            _assert_same(view_features([v]), plain_view_features([v]))
    assert np.isfinite(view_features([v]).slots).all()


def test_an_empty_batch_has_the_reference_shapes():
    _assert_same(view_features([]), plain_view_features([]))
