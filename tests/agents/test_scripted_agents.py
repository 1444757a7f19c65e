"""Scripted personas: concession targets by hand, accept rule, fixed offers, seeded prose."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.agents import make_agent
from negotiation.env import EnvConfig, load_domain, load_domains, make_scenario, parse_message, run_episode
from tests.agents.car_prefs import SCENARIO, SELLER_BEST, said, view

CFG = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9.0,
                accept_applies_terms=False)


@pytest.mark.parametrize("spec,turn,expected", [
    ("scripted:boulware", 1, 1.0),
    ("scripted:boulware", 11, 1 - 0.5 * (5 / 11) ** 5),     # round 6: τ = 5/11, e = 0.2
    ("scripted:conceder", 11, 1 - 0.5 * (5 / 11) ** 0.5),   # e = 2 concedes early
    ("scripted:linear", 11, 1 - 0.5 * 5 / 11),
    ("scripted:boulware", 23, 0.5),                        # last round: the floor
    ("scripted:boulware?start=0.9&floor=0.7", 23, 0.7),
    ("scripted:fixed", 17, 0.8),
])
def test_time_dependent_targets_by_hand(spec, turn, expected):
    agent = make_agent(spec, "seller")
    assert agent.strategy.target(view(turn=turn)) == pytest.approx(expected)


def test_titfortat_mirrors_the_counterparts_concession():
    # Buyer ledgers score .35 then .5 for the seller (price 20 -> 40): it moved .15 toward us.
    history = (said(1, "seller", {"price": 60}), said(2, "buyer", {"price": 20}),
               said(3, "seller", {"price": 60}), said(4, "buyer", {"price": 40}))
    agent = make_agent("scripted:titfortat", "seller")
    assert agent.strategy.target(view(turn=5, history=history)) == pytest.approx(0.95 - 0.15 - 0.1 * 2 / 11)
    assert agent.strategy.target(view(turn=5, history=history[:2])) == pytest.approx(0.95 - 0.1 * 2 / 11)


def test_opening_offer_is_the_best_full_contract_spoken_in_prose():
    reply = make_agent("scripted:boulware", "seller").respond(view(turn=1))
    parsed = parse_message(reply.text)
    assert parsed.ok and parsed.action == "COUNTER" and dict(parsed.terms) == SELLER_BEST


def test_accepts_once_the_ledger_reaches_the_target():
    # Ledger price 48 alone: seller Ũ = .5 + .3 * .4 / 2 = .62; floor .5 at the last round.
    history = (said(21, "seller", {"price": 60}), said(22, "buyer", {"price": 48}))
    agent = make_agent("scripted:boulware", "seller")
    late = parse_message(agent.respond(view(turn=23, history=history, ledger={"price": 48})).text)
    assert late.action == "ACCEPT" and late.terms == ()
    early = parse_message(agent.respond(view(turn=3, history=history, ledger={"price": 48})).text)
    assert early.action == "COUNTER"


def test_never_accepts_its_own_offer():
    history = (said(1, "seller", {"price": 60}),)
    reply = make_agent("scripted:boulware", "seller").respond(view(turn=3, history=history, ledger={"price": 60}))
    assert parse_message(reply.text).action == "COUNTER"


def test_does_not_accept_its_own_standing_offer_after_an_unreadable_turn():
    # The buyer's price 48 suits the seller late in the game, but the buyer's last turn could not
    # be read: the table is the seller's own offer of 48 from turn 21, so the seller counters.
    unread = replace(said(22, "buyer", {"price": 48}), ok=False)
    history = (said(21, "seller", {"price": 48}), unread)
    agent = make_agent("scripted:boulware?readable=1", "seller")
    reply = parse_message(agent.respond(view(turn=23, history=history, ledger={"price": 48})).text)
    assert reply.action == "COUNTER"
    legacy = make_agent("scripted:boulware", "seller")  # the demo's frozen rule: any counterpart turn
    assert parse_message(legacy.respond(view(turn=23, history=history, ledger={"price": 48})).text).action == "ACCEPT"
    readable = replace(unread, ok=True)
    reply = parse_message(agent.respond(view(turn=23, history=(history[0], readable), ledger={"price": 48})).text)
    assert reply.action == "ACCEPT"


class _Garbage:
    """A seller whose every turn is unreadable."""

    spec = "garbage"

    blocking = False

    def respond(self, view):
        from negotiation.env import Reply

        return Reply("I would like a good deal, thank you. {not json")


@pytest.mark.parametrize("buyer", ["scripted:boulware?e=0.5&readable=1", "scripted:titfortat?readable=1",
                                   "scripted:conceder?readable=1"])
def test_a_seller_that_never_writes_a_readable_action_gets_no_deal(buyer):
    ep = run_episode(SCENARIO, _Garbage(), make_agent(buyer, "buyer"), CFG)
    assert ep.outcome == "no_deal" and len(ep.turns) == 2 * CFG.max_rounds
    assert ep.n_bad("seller") == CFG.max_rounds


def test_fixed_seller_holds_one_offer_until_accepted():
    ep = run_episode(SCENARIO, make_agent("scripted:fixed", "seller"),
                     make_agent("scripted:boulware", "buyer"), CFG)
    named: dict = {}
    for turn in ep.turns:
        if turn.role == "seller" and turn.action == "COUNTER":
            for name, value in turn.terms:
                assert named.setdefault(name, value) == value
    assert re.search(r"hold my position|can't move further|still need", ep.turns[2].prose)


def test_reply_depends_only_on_the_view():
    seller = make_agent("scripted:titfortat", "seller")
    other = replace(SCENARIO, buyer=make_scenario(SCENARIO.domain, 1).buyer)
    assert run_episode(SCENARIO, seller, make_agent("scripted:fixed", "buyer"), CFG).turns[0].raw == \
        run_episode(other, seller, make_agent("scripted:fixed", "buyer"), CFG).turns[0].raw
    v = view(turn=3, history=(said(1, "seller", {"price": 60}), said(2, "buyer", {"price": 30})),
             ledger={"price": 30}, sample_seed=42)
    assert seller.respond(v) == seller.respond(v)
    texts = {seller.respond(replace(v, sample_seed=s)).text for s in range(20)}
    assert len(texts) > 3  # prose varies with the episode's sample seed, terms do not
    assert len({parse_message(t).terms for t in texts}) == 1


PERSONAS = ["boulware", "conceder", "linear", "titfortat", "fixed"]


@settings(max_examples=25, deadline=None)
@given(domain=st.sampled_from(sorted(load_domains())), seed=st.integers(0, 10**7),
       seller=st.sampled_from(PERSONAS), buyer=st.sampled_from(PERSONAS))
def test_scripted_turns_always_parse_and_stay_in_schema(domain, seed, seller, buyer):
    scenario = make_scenario(load_domain(domain), seed)
    ep = run_episode(scenario, make_agent(f"scripted:{seller}", "seller"),
                     make_agent(f"scripted:{buyer}", "buyer"), CFG)
    assert ep.outcome in ("deal", "no_deal") and ep.n_bad() == 0
    for t in ep.turns:
        assert (t.n_off_schema, t.n_invalid, t.n_out_of_range) == (0, 0, 0)
        assert not any(t.flags.values())
    if ep.deal:
        assert ep.closed_by == ep.turns[-1].role and 0.0 <= ep.S <= 1.0
