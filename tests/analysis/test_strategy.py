"""The opening offer's value and closing turns that name the concession, on hand-made transcripts."""

from __future__ import annotations

import json

import pandas as pd

from negotiation.analysis._strategy import names_concession, strategy_summary
from tests.analysis.frames import episode, frame, turn


def _utility(domain, seed, ledger):  # a stand-in scoring: the price share of the range
    return ledger.get("price", 0.0) / 100.0


def test_names_concession_by_term_name_or_new_level():
    assert names_concession("Deal, with the annual service plan.", {"service": "annual"})
    assert names_concession("Fine, the Service plan works.", {"service": "semiannual"})
    assert names_concession("OK on the delivery day.", {"delivery_day": 3})
    assert not names_concession("Deal! Thank you.", {"service": "annual"})
    assert not names_concession("Agreed on serviceable terms.", {"service": 2})


def test_strategy_summary_reads_the_opening_ledger_and_the_closing_turn():
    episodes = frame([episode("a", "d", 1, "b", seller_u=0.6, n_turns=5, closed_by="seller"),
                      episode("a", "d", 2, "b", seller_u=0.5, n_turns=5, closed_by="seller"),
                      episode("a", "d", 3, "b", deal=False, n_turns=24)])
    ledgers = {1: ({"price": 90}, {"price": 70}, {"price": 70, "service": "annual"}),
               2: ({"price": 80}, {"price": 60}, {"price": 50})}
    rows = []
    for seed, (opening, mid, offer) in ledgers.items():
        closing = "Deal with the annual service." if seed == 1 else "Deal, thanks."
        rows += [turn("a", "d", seed, "b", 1, "seller", "Hello", terms=[("price", opening["price"])], ledger=opening),
                 turn("a", "d", seed, "b", 2, "buyer", "Lower", ledger=mid),
                 turn("a", "d", seed, "b", 3, "seller", "Hmm", ledger=mid),
                 turn("a", "d", seed, "b", 4, "buyer", "Offer", ledger=offer),
                 turn("a", "d", seed, "b", 5, "seller", closing, action="ACCEPT", ledger=offer)]
    rows.append(turn("a", "d", 3, "b", 1, "seller", "Hi", ledger={}))  # opens without terms: not an opener
    turns = pd.DataFrame(rows)
    out = strategy_summary(turns, episodes, {"d": ["price", "service"]}, _utility)
    assert abs(out.loc["a", "open_offer_u"] - 0.85) < 1e-12                     # (0.90 + 0.80) / 2
    assert abs(out.loc["a", "deal_minus_open_u"] - ((0.6 - 0.9) + (0.5 - 0.8)) / 2) < 1e-12
    assert out.loc["a", "closers_naming_concession"] == 0.5                      # seed 1 names "service"
