"""Training and validation scenarios, each with its buyer attached as a dataset field.

Training dataset: the product of the training domains and the training seed block, in an order
permuted by ``numpy.random.default_rng(dataset_seed)``; item ``i`` is the ``i``-th pair of that
order (wrapping around after a full pass) and its buyer is drawn from the pool's mixture with
``default_rng([dataset_seed, i])``. Items are computed by position, so a continuation resumes
the data where its parent stopped and the NeMo-RL backend can build the same items.

Validation set: fixed for a study (it depends on the data section only, never on an arm's
seed), ``validation_scenarios`` pairs from the validation seed block, buyers drawn the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from negotiation.agents import make_agent
from negotiation.env import Domain, Scenario, load_domain, make_scenario
from negotiation.training._config import BuyerShare, TrainData


@dataclass(frozen=True)
class TrainItem:
    """One dataset entry: a scenario key and the buyer that plays it."""

    domain: str
    seed: int
    buyer: str
    """Buyer spec string."""

    def as_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "seed": self.seed, "buyer": self.buyer}


def _draw_buyer(buyers: Sequence[BuyerShare], rng: np.random.Generator) -> str:
    weights = np.array([b.weight for b in buyers], dtype=np.float64)
    return buyers[int(rng.choice(len(buyers), p=weights / weights.sum()))].spec


@lru_cache(maxsize=8)
def _pair_order(domains: tuple[str, ...], lo: int, hi: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(len(domains) * (hi - lo))


def _item(data: TrainData, order: np.ndarray, block: tuple[int, int], i: int,
          buyer_seed: int) -> TrainItem:
    """Item ``i``: pair ``order[i]`` of (domain, seed in ``block``), buyer from the mixture."""
    lo, hi = block
    domain_idx, offset = divmod(int(order[i % len(order)]), hi - lo)
    buyer = _draw_buyer(data.buyers, np.random.default_rng([buyer_seed, i]))
    return TrainItem(data.domains[domain_idx], lo + offset, buyer)


def training_items(data: TrainData, dataset_seed: int, start: int, count: int) -> list[TrainItem]:
    """Items ``start .. start + count - 1`` of the training dataset."""
    if start < 0 or count < 0:
        raise ValueError(f"start and count must be >= 0, got start={start} count={count}")
    lo, hi = data.train_seeds
    order = _pair_order(data.domains, lo, hi, dataset_seed)
    return [_item(data, order, data.train_seeds, i, dataset_seed)
            for i in range(start, start + count)]


def validation_items(data: TrainData) -> list[TrainItem]:
    """The study's fixed validation set."""
    lo, hi = data.validation_seeds
    # Seeded by the block itself so every arm of the study validates on the same items.
    order = _pair_order(data.domains, lo, hi, lo)
    n = min(data.validation_scenarios, len(order))
    return [_item(data, order, data.validation_seeds, i, hi) for i in range(n)]


class ScenarioMaker:
    """Builds scenarios and buyer agents for dataset items, caching domains and agents."""

    def __init__(self, alpha: float):
        self.alpha = alpha
        self._domains: dict[str, Domain] = {}
        self._buyers: dict[str, Any] = {}

    def scenario(self, item: TrainItem) -> Scenario:
        if item.domain not in self._domains:
            self._domains[item.domain] = load_domain(item.domain)
        return make_scenario(self._domains[item.domain], item.seed, self.alpha)

    def buyer(self, item: TrainItem) -> Any:
        if item.buyer not in self._buyers:
            self._buyers[item.buyer] = make_agent(item.buyer, "buyer")
        return self._buyers[item.buyer]
