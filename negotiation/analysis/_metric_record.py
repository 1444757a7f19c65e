"""Report metrics, each declared once: the metrics table, the pairing and the report read them here.

A ``Metric`` names its per-episode value, whether it counts deals only, the metrics-table column
that shows its mean over a group and the name a contrast uses. Two built-in metrics keep the two
names their outputs always had (``deal`` / ``deal_rate``, ``n_turns`` / ``mean_turns``): written
tables and JSON keys do not change. A new metric is one ``register_metric(Metric(...))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

__all__ = ["METRICS", "Metric", "add_derived", "add_late_close", "register_metric", "table_metrics", "welfare"]


@dataclass(frozen=True)
class Metric:
    """One report metric."""

    name: str
    """Its name in contrasts (``ContrastSpec.metric``) and the key of ``METRICS``."""
    label: str
    """Human name used in tables."""
    value: Callable[[pd.DataFrame], pd.Series]
    """Per-episode value from the episode table (``add_derived`` columns included); NaN where an
    episode does not count beyond the deal-only rule (the metrics table's mean skips it)."""
    deal_only: bool
    """True when the metric is defined on closed deals only (NaN on no-deals in the table; the
    pairing keeps the keys every arm closed)."""
    column: str | None = None
    """The metrics-table column of its mean per (arm, panel); ``None``: not in the table."""
    pairable: bool = True
    """Whether a contrast may name it (its value is finite on every episode it counts)."""


def welfare(frame: pd.DataFrame) -> pd.Series:
    """Joint welfare of each episode, ``seller_u + buyer_u`` (NaN on no-deals): the one definition
    the metrics table and the contrasts read."""
    return frame["seller_u"].astype(float) + frame["buyer_u"].astype(float)


def add_late_close(episodes: pd.DataFrame, converge_turn: int) -> pd.DataFrame:
    """Copy of ``episodes`` with ``closes_late``: a deal closed at or after ``converge_turn``."""
    out = episodes.copy()
    closing = pd.to_numeric(out["closing_turn"], errors="coerce")
    out["closes_late"] = (out["deal"].astype(bool) & (closing >= converge_turn)).astype(float)
    return out


def add_derived(episodes: pd.DataFrame, converge_turn: int, turn_cap: int) -> pd.DataFrame:
    """``add_late_close`` plus ``at_cap``: a no-deal that ran to the turn cap."""
    out = add_late_close(episodes, converge_turn)
    out["at_cap"] = (~out["deal"].astype(bool) & (out["n_turns"].astype(float) >= turn_cap)).astype(float)
    return out


def _column(name: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda frame: frame[name].astype(float)


def _accept_with_terms(frame: pd.DataFrame) -> pd.Series:
    return frame["accept_had_terms"].astype(float).where(frame["closed_by"] == "seller")


def _integ_minus_dist(frame: pd.DataFrame) -> pd.Series:
    return frame["seller_u_integ"].astype(float) - frame["seller_u_dist"].astype(float)


METRICS: dict[str, Metric] = {}
"""Every metric by name, in the metrics table's column order."""


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` (a name or table column already taken is an error, never a silent override)."""
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name!r} is already registered")
    if metric.column is not None and metric.column in table_metrics():
        raise ValueError(f"metric {metric.name!r}: table column {metric.column!r} is already another metric's")
    METRICS[metric.name] = metric
    return metric


def table_metrics() -> dict[str, Metric]:
    """Metrics the metrics table shows, by column, in column order."""
    return {m.column: m for m in METRICS.values() if m.column is not None}


for _metric in (
    Metric("S", "S", _column("S"), False, "S"),
    Metric("deal", "deal rate", _column("deal"), False, "deal_rate"),
    Metric("seller_u", "deal-only seller Ũ", _column("seller_u"), True, "seller_u"),
    Metric("buyer_u", "buyer Ũ", _column("buyer_u"), True, "buyer_u"),
    Metric("welfare", "joint welfare", welfare, True, "welfare"),
    Metric("seller_u_dist", "seller Ũ distributive", _column("seller_u_dist"), True, "seller_u_dist"),
    Metric("seller_u_integ", "seller Ũ integrative", _column("seller_u_integ"), True, "seller_u_integ"),
    Metric("buyer_u_dist", "buyer Ũ distributive", _column("buyer_u_dist"), True, "buyer_u_dist"),
    Metric("buyer_u_integ", "buyer Ũ integrative", _column("buyer_u_integ"), True, "buyer_u_integ"),
    Metric("n_turns", "turns", _column("n_turns"), False, "mean_turns"),
    Metric("closes_late", "closes at or after the converge turn", _column("closes_late"), True, "late_close_share"),
    Metric("at_cap", "no deal at the turn cap", _column("at_cap"), False, "at_cap_share", pairable=False),
    Metric("accept_with_terms", "seller's accept carries terms", _accept_with_terms, True,
           "accept_with_terms_share", pairable=False),
    Metric("seller_u_integ_minus_dist", "seller Ũ integrative minus distributive", _integ_minus_dist, True),
    Metric("frontier_distance", "distance to the Pareto frontier", _column("frontier_distance"), True),
    Metric("nash_distance", "distance to the Nash point", _column("nash_distance"), True),
    Metric("welfare_share", "share of the maximum welfare", _column("welfare_share"), True),
):
    register_metric(_metric)
