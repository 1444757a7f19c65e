"""Scripted seller dialogues on the training domains: what the warm starts imitate (the lm
ladder's chats, the demo's policy bases).

A dialogue is a scripted seller persona against a buyer drawn from the protocol's training pool
by its weights (``training_buyer``), on a training domain and a seed of the training block,
played in the evaluation environment. Evaluation seeds and the held-out domain never enter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from negotiation.agents._spec import make_agent
from negotiation.env import Negotiation, View, load_domain, make_scenario

__all__ = ["scripted_seller_turns", "training_buyer"]


def training_buyer(protocol: Any, domain_index: int, seed: int, seller_index: int) -> str:
    """The buyer spec of one dialogue, drawn from ``buyers.training`` by its weights with
    ``default_rng([seed, domain_index, seller_index])``."""
    pool = protocol.buyers.training
    weights = np.array([b.weight for b in pool], dtype=np.float64)
    rng = np.random.default_rng([seed, domain_index, seller_index])
    return pool[int(rng.choice(len(pool), p=weights / weights.sum()))].spec


def scripted_seller_turns(protocol: Any, domain: str, seed: int, seller: str, buyer: str) -> list[tuple[View, str]]:
    """``(view, raw message)`` of every seller turn of one scripted episode."""
    from negotiation.protocol import env_config

    scenario = make_scenario(load_domain(domain), seed, protocol.environment.dirichlet_alpha)
    game = Negotiation(scenario, env_config(protocol, "evaluation"))
    agents = {"seller": make_agent(seller, "seller"), "buyer": make_agent(buyer, "buyer")}
    turns = []
    while not game.done:
        view = game.view()
        text = agents[game.next_role].respond(view).text
        if view.role == "seller":
            turns.append((view, text))
        game.apply(text)
    return turns
