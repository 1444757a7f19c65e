"""Hand-set preferences on the real used_car domain, so agent tests can be checked by hand.

Seller weights (sum 1): price .3, model .05, interior .1, service .05, accessories .05,
delivery .1, warranty_months .15, trade_in_credit .1, color .02, payment_method .08.
"""

from __future__ import annotations

from types import MappingProxyType

from negotiation.env import Message, PartyPrefs, Scenario, View, load_domain

CAR = load_domain("used_car")
SELLER_W = {"price": 0.3, "model": 0.05, "interior": 0.1, "service": 0.05, "accessories": 0.05,
            "delivery": 0.1, "warranty_months": 0.15, "trade_in_credit": 0.1, "color": 0.02,
            "payment_method": 0.08}
SELLER_PREF = {"model": "Sedan", "interior": "Premium", "service": "none", "accessories": False,
               "color": "Black", "payment_method": "Cash"}
BUYER_W = {name: 0.1 for name in CAR.term_names}
BUYER_PREF = {"model": "SUV", "interior": "Sport", "service": "annual", "accessories": True,
              "color": "Blue", "payment_method": "DealerFinancing"}
SELLER = PartyPrefs("seller", MappingProxyType(SELLER_W), MappingProxyType(SELLER_PREF))
BUYER = PartyPrefs("buyer", MappingProxyType(BUYER_W), MappingProxyType(BUYER_PREF))
SCENARIO = Scenario(CAR, 5_000_053, SELLER, BUYER)
SELLER_BEST = {"price": 60, "model": "Sedan", "interior": "Premium", "service": "none",
               "accessories": False, "delivery": 30, "warranty_months": 0, "trade_in_credit": 0,
               "color": "Black", "payment_method": "Cash"}


def view(role="seller", turn=1, history=(), ledger=None, sample_seed=1, prefs=None):
    """A view as the engine would build it (max 24 turns, evaluation phase)."""
    prefs = prefs or (SELLER if role == "seller" else BUYER)
    return View(role, CAR, prefs, turn, 24, tuple(history), MappingProxyType(dict(ledger or {})),
                "evaluation", sample_seed)


def said(turn, role, ledger_after, prose="..."):
    """A past message as the viewer sees it (the counterpart's raw text hidden)."""
    return Message(turn, role, prose, MappingProxyType(dict(ledger_after)), None, None)
