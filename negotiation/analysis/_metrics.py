"""Per-arm outcome metrics over the episode table, overall and per panel.

Shapes: an episode table has one row per episode (docs/architecture.md); a metrics
table has one row per (arm, panel) with one column per metric. Rates over turns are
ratios of sums (turns are pooled), rates over episodes are means.
"""

from __future__ import annotations

from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from negotiation.analysis._errors import MetricError

PANEL_ALL = "all"
"""Every episode of the arm."""
PANEL_HELD_OUT = "held_out"
"""Episodes on the held-out domains."""
PANEL_TRAINING = "training"
"""Episodes on the training domains."""

EPISODE_COLUMNS = (
    "arm", "domain", "seed", "buyer", "outcome", "deal", "S", "seller_u", "buyer_u", "seller_u_dist",
    "seller_u_integ", "buyer_u_dist", "buyer_u_integ", "n_turns", "n_seller_turns", "n_bad_seller",
    "n_bad_all", "closed_by", "closing_turn", "accept_had_terms",
)
"""Episode-table columns the metrics read."""


class MetricContext(BaseModel):
    """Study constants the metrics need; built from the protocol by ``context_from_protocol``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    no_deal_penalty: float = Field(gt=0)
    """λ: a no-deal scores S = −λ."""
    turn_cap: int = Field(gt=0)
    """Most turns an episode may take (two per round)."""
    converge_turn: int = Field(gt=0)
    """Turn from which both prompts say to converge (closing at or after it is "late")."""
    training_domains: tuple[str, ...]
    """Domains of the training distribution."""
    held_out_domains: tuple[str, ...]
    """Domains withheld from training."""
    buyer_split: tuple[str, str] | None
    """(same-family buyer, other buyer): the split is S against the first minus the second."""


def context_from_protocol(protocol) -> MetricContext:
    """The metric constants of a ``negotiation.protocol.Protocol`` (one source of truth)."""
    env = protocol.environment
    training_families = {buyer.family for buyer in protocol.buyers.training}
    evaluation = protocol.buyers.evaluation
    same = [name for name, buyer in evaluation.items() if buyer.family in training_families]
    other = [name for name, buyer in evaluation.items() if buyer.family not in training_families]
    split = (same[0], other[0]) if len(same) == 1 and len(other) == 1 else None
    return MetricContext(
        no_deal_penalty=env.no_deal_penalty, turn_cap=2 * env.max_rounds, converge_turn=env.converge_from_turn,
        training_domains=tuple(protocol.domains.training), held_out_domains=tuple(protocol.domains.held_out),
        buyer_split=split,
    )


def require_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """MetricError naming the first missing column."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise MetricError(where, missing[0], f"column missing from the table (have {sorted(frame.columns)[:8]}...)")


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else float("nan")


def _mean(series: pd.Series) -> float:
    return float(series.mean()) if len(series) else float("nan")


def outcome_summary(episodes: pd.DataFrame, context: MetricContext) -> dict[str, float]:
    """Outcome metrics of one set of episodes.

    ``S`` is the mean score, so ``S = deal_rate·deal_u + (1 − deal_rate)·(−λ)`` holds
    exactly; utilities, welfare and their distributive/integrative parts are deal-only.
    """
    deals = episodes[episodes["deal"].astype(bool)]
    seller_closed = deals[deals["closed_by"] == "seller"]
    closing = pd.to_numeric(deals["closing_turn"], errors="coerce")
    return {
        "episodes": float(len(episodes)),
        "S": _mean(episodes["S"].astype(float)),
        "deal_rate": _mean(episodes["deal"].astype(float)),
        "deal_u": _mean(deals["seller_u"]),
        "buyer_u": _mean(deals["buyer_u"]),
        "welfare": _mean(deals["seller_u"] + deals["buyer_u"]),
        "seller_u_dist": _mean(deals["seller_u_dist"]),
        "seller_u_integ": _mean(deals["seller_u_integ"]),
        "buyer_u_dist": _mean(deals["buyer_u_dist"]),
        "buyer_u_integ": _mean(deals["buyer_u_integ"]),
        "mean_turns": _mean(episodes["n_turns"].astype(float)),
        "bad_parse_all": _ratio(episodes["n_bad_all"].sum(), episodes["n_turns"].sum()),
        "bad_parse_seller": _ratio(episodes["n_bad_seller"].sum(), episodes["n_seller_turns"].sum()),
        "late_close_share": _mean((closing >= context.converge_turn).astype(float)),
        "at_cap_share": _mean((~episodes["deal"].astype(bool) & (episodes["n_turns"] >= context.turn_cap)).astype(float)),
        "accept_with_terms_share": _mean(seller_closed["accept_had_terms"].astype(float)),
    }


def buyer_split(episodes: pd.DataFrame, split: tuple[str, str] | None) -> float:
    """Mean S against the same-family buyer minus mean S against the other (NaN if absent)."""
    if split is None:
        return float("nan")
    same, other = (episodes.loc[episodes["buyer"] == name, "S"].astype(float) for name in split)
    return _mean(same) - _mean(other) if len(same) and len(other) else float("nan")


def panels(episodes: pd.DataFrame, context: MetricContext) -> dict[str, pd.DataFrame]:
    """The episode subsets reported per arm: all, training, held out, per buyer, per domain."""
    out = {
        PANEL_ALL: episodes,
        PANEL_TRAINING: episodes[episodes["domain"].isin(context.training_domains)],
        PANEL_HELD_OUT: episodes[episodes["domain"].isin(context.held_out_domains)],
    }
    for buyer in sorted(episodes["buyer"].unique()):
        out[f"buyer:{buyer}"] = episodes[episodes["buyer"] == buyer]
    for domain in sorted(episodes["domain"].unique()):
        out[f"domain:{domain}"] = episodes[episodes["domain"] == domain]
    return out


def metrics_table(frames: Mapping[str, pd.DataFrame], context: MetricContext) -> pd.DataFrame:
    """One row per (arm, panel) with every outcome metric and the buyer split.

    Args:
      frames: arm name -> episode table of that arm (error rows excluded upstream by
        validation; here they count as episodes with NaN scores and would show as NaN).
      context: the study's constants.
    """
    rows = []
    for arm, episodes in frames.items():
        require_columns(episodes, EPISODE_COLUMNS, arm)
        for panel, subset in panels(episodes, context).items():
            if subset.empty:
                continue
            summary = outcome_summary(subset, context)
            rows.append({"arm": arm, "panel": panel, **summary, "buyer_split": buyer_split(subset, context.buyer_split)})
    table = pd.DataFrame(rows)
    return table.astype({"episodes": int}) if not table.empty else table


def score_identity_gap(row: Mapping[str, float], context: MetricContext) -> float:
    """``S − [DR·Ũ_deal + (1 − DR)(−λ)]`` of a metrics row: zero up to rounding.

    An arm with no deal has ``deal_u`` NaN; its identity is ``S = −λ``.
    """
    deal_part = row["deal_rate"] * row["deal_u"] if row["deal_rate"] > 0 else 0.0
    return float(row["S"] - (deal_part + (1.0 - row["deal_rate"]) * -context.no_deal_penalty))


def finite(value: float) -> bool:
    """True for a finite float (NaN marks a metric with no episodes to average)."""
    return bool(np.isfinite(value))
