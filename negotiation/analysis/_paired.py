"""Many contrasts over the same arms: pairing keys coded once as integers.

``contrast_values`` (pandas, ``_contrast``) is the reference; ``PairedTables`` gives the
same values and clusters from sorted integer keys, which is what makes a family of
hundreds of contrasts over 21 arms take seconds rather than minutes.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from negotiation.analysis._errors import MetricError, PairingError
from negotiation.analysis._pairing import PAIR_KEY, key_text, metric_spec


class PairedTables:
    """Every arm's episodes stacked, with integer scenario keys shared by all arms."""

    def __init__(self, frames: Mapping[str, pd.DataFrame]) -> None:
        for arm, frame in frames.items():
            missing = [c for c in (*PAIR_KEY, "deal") if c not in frame.columns]
            if missing:
                raise MetricError(arm, missing[0], "column missing (needed by every contrast)")
        self.arms = {arm: i for i, arm in enumerate(frames)}
        stacked = pd.concat(list(frames.values()), ignore_index=True)
        self.stacked = stacked
        self.arm_of_row = np.repeat(np.arange(len(frames)), [len(f) for f in frames.values()])
        domain_code, self.domains = pd.factorize(stacked["domain"])
        seed_code, self.seeds = pd.factorize(stacked["seed"])
        buyer_code, self.buyers = pd.factorize(stacked["buyer"])
        self.n_seeds, self.n_buyers = len(self.seeds), len(self.buyers)
        self.domain_code = domain_code
        self.buyer_code = buyer_code
        self.scenario = domain_code.astype(np.int64) * self.n_seeds + seed_code
        self.key = self.scenario * self.n_buyers + buyer_code
        self.deal = stacked["deal"].astype(bool).to_numpy()
        self._metric_cache: dict[str, np.ndarray] = {}

    def _metric(self, metric: str) -> np.ndarray:
        if metric not in self._metric_cache:
            try:
                values = metric_spec(metric).value(self.stacked)
            except KeyError as err:
                raise MetricError("episodes", str(err.args[0]), f"column missing (needed by metric {metric!r})") from None
            self._metric_cache[metric] = values.to_numpy(dtype=float)
        return self._metric_cache[metric]

    def _decode(self, key: int, scenario_only: bool) -> str:
        scenario = key if scenario_only else key // self.n_buyers
        parts = [self.domains[scenario // self.n_seeds], self.seeds[scenario % self.n_seeds]]
        if not scenario_only:
            parts.append(self.buyers[key % self.n_buyers])
        return key_text(tuple(parts))

    def _rows(self, arm: str, domains: tuple[str, ...] | None, deal_only: bool,
              buyers: tuple[str, ...] | None = None) -> np.ndarray:
        if arm not in self.arms:
            raise PairingError("contrast", "arms", f"no table for arm {arm!r}")
        keep = self.arm_of_row == self.arms[arm]
        if domains is not None:
            keep &= np.isin(self.domain_code, [i for i, d in enumerate(self.domains) if d in domains])
        if buyers is not None:
            keep &= np.isin(self.buyer_code, [i for i, b in enumerate(self.buyers) if b in buyers])
        if deal_only:
            keep &= self.deal
        return np.flatnonzero(keep)

    def _keyed(self, arm: str, keys: np.ndarray, values: np.ndarray, metric: str, scenario_only: bool
               ) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        repeated = np.flatnonzero(keys[1:] == keys[:-1])
        if len(repeated):
            raise MetricError(arm, ",".join(PAIR_KEY), f"key {self._decode(int(keys[repeated[0]]), scenario_only)} "
                                                       "appears more than once")
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise PairingError(arm, metric, f"non-finite value at key {self._decode(int(keys[bad[0]]), scenario_only)}")
        return keys, values

    def _arm_values(self, arm: str, spec) -> tuple[np.ndarray, np.ndarray]:
        deal_only = metric_spec(spec.metric).deal_only
        rows = self._rows(arm, spec.domains, deal_only, spec.buyers)
        values = self._metric(spec.metric)[rows]
        if spec.buyer_split is None:
            return self._keyed(arm, self.key[rows], values, spec.metric, False)
        sides = []
        for buyer in spec.buyer_split:
            if buyer not in set(self.buyers):
                raise PairingError(arm, "buyer", f"no episodes against buyer {buyer!r}")
            side = self.buyer_code[rows] == list(self.buyers).index(buyer)
            sides.append(self._keyed(arm, self.scenario[rows][side], values[side], spec.metric, True))
        return _combine([sides[0], sides[1]], [1.0, -1.0], complete=not deal_only, names=[arm, arm],
                        decode=lambda k: self._decode(k, True))

    def values(self, spec) -> tuple[np.ndarray, np.ndarray]:
        """``(values, clusters)`` of a ``ContrastSpec``: one value per shared key, its seed."""
        keyed = [self._arm_values(arm, spec) for arm in spec.weights]
        scenario_only = spec.buyer_split is not None
        keys, values = _combine(keyed, list(spec.weights.values()), complete=not metric_spec(spec.metric).deal_only,
                                names=list(spec.weights), decode=lambda k: self._decode(k, scenario_only))
        if len(keys) == 0:
            raise PairingError(spec.name, "keys", "no scenario is shared by every arm of the contrast")
        scenario = keys if scenario_only else keys // self.n_buyers
        return values, np.asarray(self.seeds)[scenario % self.n_seeds]


def _combine(keyed, weights, *, complete: bool, names, decode) -> tuple[np.ndarray, np.ndarray]:
    """Weighted sum on shared keys; ``complete`` demands identical key sets."""
    keys = keyed[0][0]
    if complete:
        for (other, _), name in zip(keyed[1:], names[1:]):
            if not np.array_equal(keys, other):
                only = np.setxor1d(keys, other)
                raise PairingError(name, ",".join(PAIR_KEY), f"unpaired key {decode(int(only[0]))} against {names[0]!r}")
    for other, _ in keyed[1:]:
        keys = np.intersect1d(keys, other, assume_unique=True)
    total = np.zeros(len(keys))
    for (arm_keys, arm_values), weight in zip(keyed, weights):
        total += weight * arm_values[np.searchsorted(arm_keys, keys)]
    return keys, total
