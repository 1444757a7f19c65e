"""Helpers for the env tests: a seven-term toy domain with hand-set preferences, so expected scores are computable by hand.

Seller weights sum to 1: price .4, days .1, volume .1, color .2, size .1, extras .05,
support .05; buyer weights: price .2, days .2, volume .1, color .1, size .2, extras .1,
support .1. Continuous ranges: price [0, 100] (seller high), days [10, 30] (buyer high),
volume [0, 10] (seller high).
"""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any

from negotiation.env import Domain, EnvConfig, PartyPrefs, Reply, Scenario


def _text(seller: str, buyer: str) -> dict[str, str]:
    return {"seller": seller, "buyer": buyer}


TOY_DOMAIN: dict[str, Any] = {
    "name": "toy",
    "version": 1,
    "title": "Toy sale",
    "description": _text("You sell a widget.", "You buy a widget."),
    "terms": [
        {"name": "price", "kind": "continuous", "range": [0, 100], "unit": "$k",
         "high_preferred_by": "seller", "description": _text("Price.", "Price.")},
        {"name": "days", "kind": "continuous", "range": [10, 30], "unit": "days",
         "high_preferred_by": "buyer", "description": _text("Days to pay.", "Days to pay.")},
        {"name": "volume", "kind": "continuous", "range": [0, 10], "unit": "units",
         "high_preferred_by": "seller", "description": _text("Volume.", "Volume.")},
        {"name": "color", "kind": "categorical", "levels": ["Red", "Blue", "Green"],
         "description": _text("Color.", "Color.")},
        {"name": "size", "kind": "categorical", "levels": ["S", "M", "L"],
         "description": _text("Size.", "Size.")},
        {"name": "extras", "kind": "binary", "description": _text("Extras.", "Extras.")},
        {"name": "support", "kind": "binary", "description": _text("Support.", "Support.")},
    ],
}

SELLER_W = {"price": 0.4, "days": 0.1, "volume": 0.1, "color": 0.2, "size": 0.1,
            "extras": 0.05, "support": 0.05}
BUYER_W = {"price": 0.2, "days": 0.2, "volume": 0.1, "color": 0.1, "size": 0.2,
           "extras": 0.1, "support": 0.1}
SELLER_PREF = {"color": "Blue", "size": "M", "extras": True, "support": False}
BUYER_PREF = {"color": "Blue", "size": "L", "extras": True, "support": True}


def toy_domain_dict() -> dict[str, Any]:
    return copy.deepcopy(TOY_DOMAIN)


def make_toy_domain() -> Domain:
    return Domain.model_validate(toy_domain_dict())


def make_toy(toy_domain: Domain) -> Scenario:
    seller = PartyPrefs("seller", MappingProxyType(SELLER_W), MappingProxyType(SELLER_PREF))
    buyer = PartyPrefs("buyer", MappingProxyType(BUYER_W), MappingProxyType(BUYER_PREF))
    return Scenario(toy_domain, 7, seller, buyer)


def env_config(*, training: bool = False) -> EnvConfig:
    """The paper's constants (T=12, λ=0.3, g=0.05, t_soft=0.75 T = 9) as test inputs."""
    return EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9.0,
                     accept_applies_terms=training, phase="training" if training else "evaluation")


def message(action: str, prose: str = "Here is my view.", **terms: Any) -> str:
    """Prose followed by one JSON action naming ``terms``."""
    payload = {"action": action, "terms": [{"name": k, "value": v} for k, v in terms.items()]}
    return f"{prose}\n{json.dumps(payload)}"


class Replay:
    """An agent that plays a fixed list of messages, repeating the last one."""

    blocking = False

    def __init__(self, spec: str, texts: list[str]):
        self.spec = spec
        self.texts = texts
        self.views: list[Any] = []

    def respond(self, view: Any) -> Reply:
        self.views.append(view)
        return Reply(self.texts[min(view.round - 1, len(self.texts) - 1)])
