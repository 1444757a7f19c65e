"""Scripted seller dialogues rendered as the seller's chat: the ladder's tokenizer corpus and its
imitation data.

Every dialogue is a scripted seller persona (``warm_start.corpus.sellers``) against a training
buyer (``negotiation.agents.scripted_seller_turns``): the first ``train_seeds_per_domain`` seeds
of the training block for training, the last ``validation_seeds_per_domain`` for the held-out
validation loss. Each seller turn becomes chat examples in the protocol's prompt
variants, rendered by ``negotiation.env.render_messages`` (the same messages an ``hf:`` or
``vllm:`` seller is prompted with):

- ``evaluation``: ``[system, user]`` as re-rendered at that turn, then the seller's raw message;
- ``training``: one growing chat per episode (system, opening, the buyer's prose as user turns,
  the seller's raw messages as assistant turns), every assistant turn a target.
"""

from __future__ import annotations

from typing import Any, Iterator, Literal

from negotiation.agents import scripted_seller_turns, training_buyer
from negotiation.env import render_messages
from negotiation.lm import Chat

__all__ = ["corpus_seeds", "seller_chats", "tokenizer_texts"]

Split = Literal["train", "validation"]


def corpus_seeds(protocol: Any, split: Split) -> range:
    """Seeds of ``split``: the first (train) or last (validation) seeds of ``seeds.training``."""
    block, corpus = protocol.seeds.training, protocol.warm_start.corpus
    if split == "train":
        return range(block.start, block.start + corpus.train_seeds_per_domain)
    return range(block.stop - corpus.validation_seeds_per_domain, block.stop)


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
                turns = scripted_seller_turns(protocol, domain, seed, seller, training_buyer(protocol, d, seed, i))
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
