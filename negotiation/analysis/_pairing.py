"""Per-episode metric values and within-scenario pairing of arms.

A paired contrast is a weighted sum over arms of one metric on the same scenario key
(``domain, seed, buyer``): ``{A: +1, B: −1}`` is A − B, and ``{A: 1, B: −1, C: −1, D: 1}``
is the difference of two gains. Metrics over every episode require complete pairing;
deal-only metrics are restricted to the keys every arm closed.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from negotiation.analysis._errors import MetricError, PairingError
from negotiation.analysis._metric_record import METRICS, Metric, add_late_close, welfare

__all__ = ["CLUSTER", "METRICS", "PAIR_KEY", "SCENARIO_KEY", "add_late_close", "buyer_split_series",
           "combine_paired", "key_text", "metric_series", "metric_spec", "paired_values", "welfare"]

PAIR_KEY = ("domain", "seed", "buyer")
"""Columns that identify one scenario cell across arms."""
SCENARIO_KEY = ("domain", "seed")
"""Columns of a scenario without its buyer (the buyer split pairs on these)."""
CLUSTER = "seed"
"""Resampling unit: a seed carries all its domains and both buyers."""


def key_text(key: object) -> str:
    """A key tuple as plain Python literals (numpy scalars unwrapped) for messages."""
    items = key if isinstance(key, tuple) else (key,)
    return repr(tuple(getattr(item, "item", lambda item=item: item)() for item in items))


def metric_spec(metric: str) -> Metric:
    """The record of ``metric``, or a MetricError listing the names a contrast may use."""
    found = METRICS.get(metric)
    if found is None or not found.pairable:
        known = sorted(name for name, m in METRICS.items() if m.pairable)
        raise MetricError("contrast", "metric", f"unknown metric {metric!r}; known: {known}")
    return found


def metric_series(
    episodes: pd.DataFrame, metric: str, *, key: tuple[str, ...] = PAIR_KEY, where: str = "episodes"
) -> pd.Series:
    """Per-key value of ``metric``; deal-only metrics keep closed episodes only.

    Raises:
      MetricError: a needed column is missing, or a key repeats.
      PairingError: a kept row has no finite value (an error row, say).
    """
    spec = metric_spec(metric)
    missing = [c for c in (*key, "deal") if c not in episodes.columns]
    if missing:
        raise MetricError(where, missing[0], f"column missing (needed by metric {metric!r})")
    frame = episodes[episodes["deal"].astype(bool)] if spec.deal_only else episodes
    try:
        values = spec.value(frame)
    except KeyError as err:
        raise MetricError(where, str(err.args[0]), f"column missing (needed by metric {metric!r})") from None
    series = pd.Series(values.to_numpy(dtype=float), index=pd.MultiIndex.from_frame(frame[list(key)]))
    if series.index.has_duplicates:
        dup = series.index[series.index.duplicated()][0]
        raise MetricError(where, ",".join(key), f"key {key_text(dup)} appears more than once")
    bad = ~np.isfinite(series.to_numpy())
    if bad.any():
        raise PairingError(where, metric, f"non-finite value at key {key_text(series.index[bad][0])}")
    return series


def buyer_split_series(
    episodes: pd.DataFrame, metric: str, minuend: str, subtrahend: str, *, where: str = "episodes"
) -> pd.Series:
    """Per-scenario ``metric`` against ``minuend`` minus against ``subtrahend`` (the buyer split)."""
    by_buyer = {}
    for buyer in (minuend, subtrahend):
        rows = episodes[episodes["buyer"] == buyer]
        if rows.empty:
            raise PairingError(where, "buyer", f"no episodes against buyer {buyer!r}")
        by_buyer[buyer] = metric_series(rows, metric, key=SCENARIO_KEY, where=where)
    return combine_paired(by_buyer, {minuend: 1.0, subtrahend: -1.0}, complete=not metric_spec(metric).deal_only)


def combine_paired(
    series: Mapping[str, pd.Series], weights: Mapping[str, float], *, complete: bool
) -> pd.Series:
    """``Σ weights[a]·series[a]`` on each key.

    With ``complete`` every arm must hold exactly the same keys (PairingError naming
    the arm and a key otherwise); without it the keys are intersected (deal-only).
    """
    if set(weights) - set(series):
        raise PairingError("contrast", "arms", f"no table for arms {sorted(set(weights) - set(series))!r}")
    names = list(weights)
    reference = series[names[0]].index
    if complete:
        for name in names[1:]:
            other = series[name].index
            only = reference.difference(other).union(other.difference(reference))
            if len(only):
                raise PairingError(name, ",".join(reference.names), f"unpaired key {key_text(only[0])} against {names[0]!r}")
    common = reference
    for name in names[1:]:
        common = common.intersection(series[name].index)
    common = common.sort_values()
    total = pd.Series(0.0, index=common)
    for name in names:
        total = total + weights[name] * series[name].reindex(common)
    return total


def paired_values(
    frames: Mapping[str, pd.DataFrame], weights: Mapping[str, float], metric: str
) -> pd.Series:
    """Within-scenario contrast values of ``metric`` over the arms in ``weights``."""
    spec = metric_spec(metric)
    series = {name: metric_series(frames[name], metric, where=name) for name in weights if name in frames}
    return combine_paired(series, weights, complete=not spec.deal_only)
