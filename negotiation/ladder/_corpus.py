"""Scripted seller dialogues rendered as the seller's chat: the ladder's tokenizer corpus and its
imitation data.

Every dialogue is a scripted seller persona (``warm_start.corpus.sellers``) against a buyer drawn
from the protocol's training pool by its weights, on a training domain and a seed of the training
block: the first ``train_seeds_per_domain`` seeds for training, the last
``validation_seeds_per_domain`` for the held-out validation loss. Evaluation seeds and the
held-out domain never enter. Each seller turn becomes chat examples in the protocol's prompt
variants, rendered by ``negotiation.env.render_messages`` (the same messages an ``hf:`` or
``vllm:`` seller is prompted with):

- ``evaluation``: ``[system, user]`` as re-rendered at that turn, then the seller's raw message;
- ``training``: one growing chat per episode (system, opening, the buyer's prose as user turns,
  the seller's raw messages as assistant turns), every assistant turn a target.
"""

from __future__ import annotations

from typing import Any, Iterator, Literal

import numpy as np

from negotiation.agents import make_agent
from negotiation.env import Negotiation, load_domain, make_scenario, render_messages
from negotiation.lm import Chat

__all__ = ["corpus_seeds", "seller_chats", "tokenizer_texts"]

Split = Literal["train", "validation"]


def corpus_seeds(protocol: Any, split: Split) -> range:
    """Seeds of ``split``: the first (train) or last (validation) seeds of ``seeds.training``."""
    block, corpus = protocol.seeds.training, protocol.warm_start.corpus
    if split == "train":
        return range(block.start, block.start + corpus.train_seeds_per_domain)
    return range(block.stop - corpus.validation_seeds_per_domain, block.stop)


def _buyer_spec(protocol: Any, domain_index: int, seed: int, seller_index: int) -> str:
    """The buyer of one dialogue, drawn from the training pool by its weights."""
    pool = protocol.buyers.training
    weights = np.array([b.weight for b in pool], dtype=np.float64)
    rng = np.random.default_rng([seed, domain_index, seller_index])
    return pool[int(rng.choice(len(pool), p=weights / weights.sum()))].spec


def _seller_turns(protocol: Any, domain: str, seed: int, seller: str, buyer: str) -> list[tuple[Any, str]]:
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


def _chats(protocol: Any, turns: list[tuple[Any, str]], key: tuple[str, int, str]) -> Iterator[Chat]:
    converge = protocol.environment.converge_from_turn
    variants = protocol.warm_start.corpus.prompt_variants
    if "evaluation" in variants:
        for view, text in turns:
            messages = render_messages(view, "evaluation", converge_from_turn=converge)
            yield Chat((*messages, {"role": "assistant", "content": text}), "evaluation", *key)
    if "training" in variants and turns:
        view, text = turns[-1]
        messages = render_messages(view, "training")
        yield Chat((*messages, {"role": "assistant", "content": text}), "training", *key)


def seller_chats(protocol: Any, split: Split) -> Iterator[Chat]:
    """Every imitation example of ``split``, in a fixed order (domain, seed, persona)."""
    sellers = protocol.warm_start.corpus.sellers
    for d, domain in enumerate(protocol.domains.training):
        for seed in corpus_seeds(protocol, split):
            for i, seller in enumerate(sellers):
                turns = _seller_turns(protocol, domain, seed, seller, _buyer_spec(protocol, d, seed, i))
                yield from _chats(protocol, turns, (domain, seed, seller))


def tokenizer_texts(protocol: Any) -> Iterator[str]:
    """The tokenizer's corpus: each distinct message text of the training split's chats, once,
    plus the chat template's role names."""
    seen: set[str] = set()
    yield "system\nuser\nmodel\n"
    for chat in seller_chats(protocol, "train"):
        for message in chat.messages:
            if message["content"] not in seen:
                seen.add(message["content"])
                yield message["content"]
