"""The episode engine: turn order, ledger, ACCEPT in both phases, malformed turns, the cap."""

from __future__ import annotations

import asyncio

import pytest

from negotiation.env import Negotiation, arun_episode, run_episode
from tests.env.toy_env import Replay, env_config, message

OPEN = message("COUNTER", "I propose a high price and blue.", price=80, color="Blue")


def play(toy, seller_texts, buyer_texts, *, training=False):
    seller, buyer = Replay("replay:s", seller_texts), Replay("replay:b", buyer_texts)
    return run_episode(toy, seller, buyer, env_config(training=training)), seller, buyer


def test_seller_opens_and_counters_overwrite_the_ledger(toy):
    ep, _, _ = play(toy, [OPEN, message("COUNTER", size="M"), message("ACCEPT")],
                    [message("COUNTER", price=60, days=20), message("COUNTER", price=70)])
    assert [t.role for t in ep.turns] == ["seller", "buyer", "seller", "buyer", "seller"]
    assert [t.turn for t in ep.turns] == [1, 2, 3, 4, 5]
    assert dict(ep.turns[1].ledger_after) == {"price": 60, "color": "Blue", "days": 20}
    assert list(ep.turns[1].ledger_after) == ["price", "color", "days"]  # first-named order kept
    assert dict(ep.final_ledger) == {"price": 70, "color": "Blue", "days": 20, "size": "M"}
    assert (ep.outcome, ep.closed_by, ep.n_turns, ep.n_rounds) == ("deal", "seller", 5, 3)
    # seller Ũ: price .4*.4 + days .1*0 + color .2 + size .1 = .46 -> (1 + .46) / 2
    assert ep.S == pytest.approx(0.73)
    assert ep.seller_score.u_tilde == pytest.approx(0.73)


def test_evaluation_accept_ignores_attached_terms(toy):
    ep, _, _ = play(toy, [OPEN], [message("ACCEPT", "Deal.", price=10)])
    assert ep.deal and ep.closed_by == "buyer" and ep.accept_had_terms
    assert dict(ep.final_ledger) == {"price": 80, "color": "Blue"}
    assert ep.turns[1].terms == (("price", 10),) and ep.turns[1].action == "ACCEPT"


def test_training_accept_applies_attached_terms_first(toy):
    ep, _, _ = play(toy, [OPEN], [message("ACCEPT", "Deal.", price=10)], training=True)
    assert ep.deal and ep.accept_had_terms and ep.config.phase == "training"
    assert dict(ep.final_ledger) == {"price": 10, "color": "Blue"}


def test_accept_of_an_empty_ledger_is_malformed(toy):
    ep, _, buyer = play(toy, [message("ACCEPT", "Deal!"), OPEN],
                        [message("COUNTER", price=50), message("ACCEPT")])
    first = ep.turns[0]
    assert (first.ok, first.action, first.error) == (False, None, "accept_empty_ledger")
    assert dict(first.ledger_after) == {}
    assert ep.n_bad("seller") == 1 and ep.n_bad() == 1
    assert buyer.views[0].history[0].prose == "Deal!"  # its prose still reached the buyer
    assert ep.deal and ep.closed_by == "buyer" and ep.n_turns == 4


def test_training_accept_with_terms_on_empty_ledger_closes_on_those_terms(toy):
    ep, _, _ = play(toy, [message("ACCEPT", price=90)], [message("COUNTER", price=1)], training=True)
    assert ep.deal and ep.n_turns == 1 and dict(ep.final_ledger) == {"price": 90}


def test_malformed_turn_keeps_ledger_and_delivers_prose(toy):
    bad = 'I like it. {"action": "COUNTER", "terms": {"price": 1}}'
    ep, _, buyer = play(toy, [OPEN, bad, message("ACCEPT")], [message("COUNTER", price=60)])
    t3 = ep.turns[2]
    assert (t3.ok, t3.error, t3.prose) == (False, "bad_terms", "I like it.")
    assert dict(t3.ledger_after) == dict(ep.turns[1].ledger_after)
    assert buyer.views[1].history[-1].prose == "I like it."
    assert buyer.views[1].history[-1].ok is False and buyer.views[1].history[-1].raw is None
    assert ep.n_bad("seller") == 1 and ep.n_bad("buyer") == 0


def test_cap_without_accept_is_a_no_deal(toy):
    ep, _, _ = play(toy, [OPEN], [message("COUNTER", price=20)])
    assert (ep.outcome, ep.closed_by, ep.n_turns, ep.n_rounds) == ("no_deal", None, 24, 12)
    assert ep.S == -0.3 and not ep.deal
    assert ep.n_turns_of("seller") == ep.n_turns_of("buyer") == 12


def test_views_hide_the_counterparts_json_and_preferences(toy):
    _, seller, buyer = play(toy, [OPEN, message("ACCEPT")], [message("COUNTER", price=60)])
    bview = buyer.views[0]
    assert (bview.role, bview.turn, bview.round, bview.max_turns) == ("buyer", 2, 1, 24)
    assert bview.prefs is toy.buyer and bview.phase == "evaluation"
    assert bview.history[0].raw is None and bview.history[0].ok is True  # readable, JSON hidden
    assert dict(bview.ledger) == {"price": 80, "color": "Blue"}
    sview = seller.views[1]
    assert sview.history[0].raw == OPEN and sview.history[0].ok is True
    assert sview.history[1].raw is None and sview.prefs is toy.seller


def test_state_machine_guards(toy):
    game = Negotiation(toy, env_config(), sample_seed=99)
    assert game.view().sample_seed == 99 and game.next_role == "seller"
    with pytest.raises(RuntimeError, match="still running"):
        game.record("a", "b")
    game.apply(OPEN)
    game.apply(message("ACCEPT"))
    assert game.done
    with pytest.raises(RuntimeError, match="over"):
        game.apply(OPEN)


def test_turn_records_count_term_issues(toy):
    text = message("COUNTER", price=150, color="Purple", warranty=2)
    ep, _, _ = play(toy, [text, message("ACCEPT")], [message("COUNTER", days=20)])
    t1 = ep.turns[0]
    assert (t1.n_out_of_range, t1.n_invalid, t1.n_off_schema) == (1, 1, 1)
    assert dict(t1.ledger_after) == {"price": 150, "color": "Purple", "warranty": 2}


def test_async_driver_matches_the_sync_one(toy):
    texts_s, texts_b = [OPEN, message("COUNTER", size="L")], [message("COUNTER", price=70), message("ACCEPT")]
    sync = run_episode(toy, Replay("s", texts_s), Replay("b", texts_b), env_config())
    asyn = asyncio.run(arun_episode(toy, Replay("s", texts_s), Replay("b", texts_b), env_config()))
    assert asyn == sync
