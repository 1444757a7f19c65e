"""A peer's check: ANAC pairings in our text protocol end as in NegMAS's own ``SAOMechanism``.

The runs compared are ``peer_check``'s: the seller opens, a NegMAS step is one of our rounds, and
each negotiator call is seeded as the ``negmas:`` kind seeds it. Offers, agreement, utilities,
turns and acceptor are equal; the one recorded difference is ``TIMED_OUT_OFFER``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("negmas_genius_agents")

from negotiation.agents import TIMED_OUT_OFFER, peer_check  # noqa: E402


@pytest.mark.parametrize("domain,seed,seller,buyer,turns,accepted_by", [
    ("used_car", 0, "AgentK", "TimeDependentAgentConceder", 8, "buyer"),
    ("job_offer", 1, "TimeDependentAgentConceder", "TimeDependentAgentLinear", 10, "buyer"),
    ("used_car", 0, "Gahboninho", "TimeDependentAgentConceder", 3, "seller"),
])
def test_deals_match_negmas(domain, seed, seller, buyer, turns, accepted_by):
    check = peer_check(domain, seed, seller, buyer, levels=2)
    ours, theirs = check.ours, check.negmas
    assert ours.agreement is not None and ours.agreement == theirs.agreement
    assert (ours.seller_utility, ours.buyer_utility) == (theirs.seller_utility, theirs.buyer_utility)
    assert (ours.turns, ours.accepted_by) == (theirs.turns, theirs.accepted_by) == (turns, accepted_by)
    assert ours.offers == theirs.offers and len(ours.offers) == turns - 1
    assert check.match


def test_no_deal_differs_only_by_the_timed_out_offer():
    check = peer_check("used_car", 0, "NiceTitForTat", "AgentK", levels=2)
    ours, theirs = check.ours, check.negmas
    assert ours.agreement is None and theirs.agreement is None and ours.turns == theirs.turns == 24
    # what TIMED_OUT_OFFER says: NegMAS records the buyer's last, unanswerable offer as None
    assert "None" in TIMED_OUT_OFFER
    assert theirs.offers[-1] is None and ours.offers[-1] is not None
    assert ours.offers[:-1] == theirs.offers[:-1] and None not in theirs.offers[:-1]
    assert check.match


def test_match_sees_a_difference():
    check = peer_check("used_car", 0, "AgentK", "TimeDependentAgentConceder", levels=2)
    moved = replace(check.negmas, offers=check.negmas.offers[:-1] + (check.negmas.offers[0],))
    assert not replace(check, negmas=moved).match
    assert not replace(check, negmas=replace(check.negmas, accepted_by="seller")).match
    no_deal = replace(check.negmas, agreement=None, seller_utility=None, buyer_utility=None, accepted_by=None)
    assert not replace(check, negmas=no_deal).match


def test_no_anac_agent_listens_to_the_callbacks_the_kind_never_calls():
    # SAOMechanism (extra_callbacks=True by default) tells each negotiator of the partner's offers and
    # answers and of rounds; the ``negmas:`` kind calls only propose_/respond_, so an agent that
    # overrode one of these would see less in our protocol: none does, which the 168 matches rely on
    from negmas.sao import SAONegotiator

    from negotiation.agents import anac_classes

    callbacks = ("on_partner_proposal", "on_partner_response", "on_round_start", "on_round_end", "on_partner_ended")
    assert all(hasattr(SAONegotiator, hook) for hook in callbacks)
    listening = [(name, hook) for name, (_, cls) in anac_classes().items() for hook in callbacks
                 if getattr(cls, hook, None) is not getattr(SAONegotiator, hook, None)]
    assert not listening
