"""The demo policy's warm start: each untrained width imitates scripted sellers for one budget.

The paper's bases are pretrained models that negotiate better the larger they are; the demo's
untrained policies are near-uniform at every width, so their bases played alike (the same S at
every width). ``policy_warm_start`` gives each width the same corpus and the same budget of
supervised steps on it: the turns of scripted seller personas against the training buyers
(``negotiation.agents.scripted_seller_turns``, as the lm ladder's warm start), each turn as the
action the policy would sample to say it (``imitation_action``). The loss is the mean negative
log-probability of the imitated decisions, over the tokens that were decisions (``token_mask``).

Deterministic: the corpus is fixed by the protocol, the weights by ``init_seed``, the turn draws
by the warm start's seed; torch runs single-threaded, as in training.
"""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict

from negotiation.agents import (Policy, PolicyArch, feature_tensors, imitation_action, scripted_seller_turns,
                                token_logprobs_entropy, token_mask, training_buyer, view_features)

__all__ = ["IMITATION_RECORD", "ImitationCorpus", "ImitationRecord", "imitate", "imitation_corpus", "write_imitated_policy"]

IMITATION_RECORD = "warm_start.json"
"""What the warm start did, beside the base's weights (``ImitationRecord``)."""


class ImitationRecord(BaseModel):
    """A policy base's warm start: corpus, budget and loss (no clock: the folder is a DVC output)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: int = 1
    """Version of this record."""
    size: str
    """The protocol size."""
    corpus_turns: int
    """Seller turns imitated."""
    skipped_turns: int
    """Scripted turns the policy has no action for (unparsable, invalid), left out."""
    steps: int
    """Optimizer steps."""
    loss_first: float
    """Mean imitation loss on the whole corpus before the first step."""
    loss_last: float
    """The same after the last step."""


class ImitationCorpus:
    """Imitated seller turns: ``features`` (torch tensors, one row per turn) and ``actions``
    ``(turns, N_TOKENS)`` int64."""

    def __init__(self, features: dict[str, torch.Tensor], actions: torch.Tensor, skipped: int):
        self.features, self.actions, self.skipped = features, actions, skipped

    def __len__(self) -> int:
        return int(self.actions.shape[0])


def imitation_corpus(protocol: Any, bins: np.ndarray) -> ImitationCorpus:
    """Every scripted seller turn of ``protocol.policy_warm_start``'s corpus, in a fixed order
    (training domain, seed, persona), with the policy's action for it."""
    warm, block = protocol.policy_warm_start, protocol.seeds.training
    seeds = range(block.start, block.start + warm.seeds_per_domain)
    views, actions, skipped = [], [], 0
    for (d, domain), seed, (i, seller) in product(enumerate(protocol.domains.training), seeds, enumerate(warm.sellers)):
        for view, text in scripted_seller_turns(protocol, domain, seed, seller, training_buyer(protocol, d, seed, i)):
            action = imitation_action(view, text, bins)
            skipped += action is None
            if action is not None:
                views.append(view)
                actions.append(action)
    return ImitationCorpus(feature_tensors(view_features(views)), torch.from_numpy(np.stack(actions)), skipped)


def _loss(policy: Policy, features: dict[str, torch.Tensor], actions: torch.Tensor) -> torch.Tensor:
    logp, _ = token_logprobs_entropy(policy.net(features), actions)
    mask = token_mask(features, actions).to(logp.dtype)
    return -(logp * mask).sum() / mask.sum()


def imitate(policy: Policy, corpus: ImitationCorpus, warm: Any) -> tuple[float, float]:
    """Train ``policy`` in place on ``corpus`` for ``warm.steps`` steps of ``warm.batch_turns``
    turns (drawn with replacement); return the whole corpus's loss before and after."""
    optimizer = torch.optim.AdamW(policy.net.parameters(), lr=warm.learning_rate, weight_decay=warm.weight_decay)
    draws = torch.Generator().manual_seed(warm.seed)
    with torch.no_grad():
        first = float(_loss(policy, corpus.features, corpus.actions))
    for _ in range(warm.steps):
        rows = torch.randint(0, len(corpus), (warm.batch_turns,), generator=draws)
        loss = _loss(policy, {k: v[rows] for k, v in corpus.features.items()}, corpus.actions[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        last = float(_loss(policy, corpus.features, corpus.actions))
    return first, last


def write_imitated_policy(protocol: Any, size: str, folder: Path) -> Path:
    """Write ``size``'s base: its untrained init (``init_seed``), warm-started by imitation,
    with ``warm_start.json`` beside the weights."""
    spec = protocol.sizes[size]
    policy = Policy.init(PolicyArch(width=spec.width), spec.init_seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        corpus = imitation_corpus(protocol, policy.bins)
        first, last = imitate(policy, corpus, protocol.policy_warm_start)
    finally:
        torch.set_num_threads(threads)
    policy.save(folder)
    record = ImitationRecord(size=size, corpus_turns=len(corpus), skipped_turns=corpus.skipped,
                             steps=protocol.policy_warm_start.steps, loss_first=round(first, 6), loss_last=round(last, 6))
    (Path(folder) / IMITATION_RECORD).write_text(json.dumps(record.model_dump(), indent=1) + "\n", encoding="utf-8")
    return Path(folder)
