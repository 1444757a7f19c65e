"""Named contrasts, run as one family from one Generator, Holm over the primary ones."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from negotiation.analysis._bootstrap import BootstrapSettings, cluster_bootstrap
from negotiation.analysis._errors import PairingError
from negotiation.analysis._multiple import holm, interval_mark
from negotiation.analysis._paired import PairedTables
from negotiation.analysis._pairing import CLUSTER, buyer_split_series, combine_paired, metric_spec, paired_values
from negotiation.study import ContrastResult, ContrastSpec, Interval


def _restrict(frame: pd.DataFrame, domains: Sequence[str] | None, buyers: Sequence[str] | None = None
              ) -> pd.DataFrame:
    frame = frame if domains is None else frame[frame["domain"].isin(list(domains))]
    return frame if buyers is None else frame[frame["buyer"].isin(list(buyers))]


def contrast_values(frames: Mapping[str, pd.DataFrame], spec: ContrastSpec) -> pd.Series:
    """The per-key values whose seed-cluster mean the contrast estimates."""
    restricted = {name: _restrict(frames[name], spec.domains, spec.buyers) for name in spec.weights if name in frames}
    if spec.buyer_split is None:
        values = paired_values(restricted, spec.weights, spec.metric)
    else:
        minuend, subtrahend = spec.buyer_split
        splits = {
            name: buyer_split_series(frame, spec.metric, minuend, subtrahend, where=name)
            for name, frame in restricted.items()
        }
        values = combine_paired(splits, spec.weights, complete=not metric_spec(spec.metric).deal_only)
    if values.empty:
        raise PairingError(spec.name, "keys", "no scenario is shared by every arm of the contrast")
    return values


def bootstrap_series(values: pd.Series, settings: BootstrapSettings, rng: np.random.Generator) -> Interval:
    """Cluster bootstrap of a keyed series, clustering on its ``seed`` index level."""
    return cluster_bootstrap(
        values.to_numpy(dtype=float), values.index.get_level_values(CLUSTER).to_numpy(), settings, rng
    )


def contrast(
    frames: Mapping[str, pd.DataFrame],
    spec: ContrastSpec,
    settings: BootstrapSettings,
    rng: np.random.Generator,
) -> Interval:
    """Interval of one contrast (no multiplicity treatment)."""
    return bootstrap_series(contrast_values(frames, spec), settings, rng)


def _no_paired_deal(spec: ContrastSpec, err: PairingError) -> bool:
    """Whether the failure is a deal-only contrast finding no key that every arm closed."""
    return metric_spec(spec.metric).deal_only and err.key == "keys"


def not_estimable(specs: Sequence[ContrastSpec], results: Sequence[ContrastResult]) -> list[str]:
    """Names of the specs ``run_family`` left out (no scenario where every arm closed a deal)."""
    done = {r.spec.name for r in results}
    return [s.name for s in specs if s.name not in done]


def run_family(
    frames: Mapping[str, pd.DataFrame], specs: Sequence[ContrastSpec], settings: BootstrapSettings
) -> list[ContrastResult]:
    """Every estimable contrast from one Generator seeded by ``settings.seed``, Holm on the primaries.

    A deal-only contrast (Ũ, welfare, ...) with no scenario on which every arm closed a deal has
    no estimate (an arm that never closes, like a seller that never writes a readable action):
    it is left out of the results (``not_estimable`` names it); any other pairing failure raises.

    The specs run in the given order, so the same specs, tables and seed give
    bit-identical intervals. Pairing goes through ``PairedTables`` (integer keys), which
    agrees with ``contrast_values`` (the pandas reference).
    """
    rng = np.random.default_rng(settings.seed)
    tables = PairedTables(frames)
    estimable, intervals = [], []
    for spec in specs:
        try:
            values, clusters = tables.values(spec)
        except PairingError as err:
            if not _no_paired_deal(spec, err):
                raise
            continue  # no draw is taken, so the contrasts after it keep the draws they would have
        estimable.append(spec)
        intervals.append(cluster_bootstrap(values, clusters, settings, rng))
    specs = estimable
    primary_at = [i for i, spec in enumerate(specs) if spec.primary]
    rejected, adjusted = holm([intervals[i].p for i in primary_at], settings.alpha) if primary_at else ([], [])
    holm_by_index = {i: (bool(r), float(a)) for i, r, a in zip(primary_at, rejected, adjusted)}
    results = []
    for i, (spec, interval) in enumerate(zip(specs, intervals)):
        is_rejected, holm_p = holm_by_index.get(i, (None, None))
        mark = interval_mark(
            excludes_zero=interval.excludes_zero, primary=spec.primary, holm_rejected=bool(is_rejected)
        )
        results.append(
            ContrastResult(spec=spec, interval=interval, holm_p=holm_p, holm_rejected=is_rejected, mark=mark)
        )
    return results
