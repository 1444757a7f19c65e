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
from negotiation.analysis._metric_record import add_derived, table_metrics
from negotiation.protocol import NoDealPenalty  # the protocol's rule for λ, not a second one

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
    no_deal_penalty: NoDealPenalty
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
    split = protocol.buyer_split()
    return MetricContext(
        no_deal_penalty=env.no_deal_penalty, turn_cap=env.turn_cap, converge_turn=env.converge_from_turn,
        training_domains=tuple(protocol.domains.training), held_out_domains=tuple(protocol.domains.held_out),
        buyer_split=split,
    )


def require_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """MetricError naming the first missing column."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise MetricError(where, missing[0], f"column missing from the table (have {sorted(frame.columns)[:8]}...)")


SUM_COLUMNS = ("n_bad_all", "n_turns", "n_bad_seller", "n_seller_turns")
"""Counts summed per group: the bad-parse rates pool turns (ratios of sums)."""


def _prepared(episodes: pd.DataFrame, context: MetricContext) -> pd.DataFrame:
    """Per-episode columns whose group means (NaN skipped) are the metrics (``table_metrics``).

    Deal-only columns are NaN on no-deals, whatever the table holds there, so a mean
    over a group is the mean over its deals.
    """
    derived = add_derived(episodes, context.converge_turn, context.turn_cap)
    deal = derived["deal"].astype(bool)
    columns = {"arm": episodes["arm"], "domain": episodes["domain"], "buyer": episodes["buyer"]}
    for column, metric in table_metrics().items():
        value = metric.value(derived).astype(float)
        columns[column] = value.where(deal) if metric.deal_only else value
    out = pd.DataFrame(columns)  # one constructor: pandas then sums S in the same order as always
    for column in SUM_COLUMNS:
        out[f"sum:{column}"] = episodes[column].astype(float)
    split = context.buyer_split or ("", "")
    out["S_same"] = out["S"].where(episodes["buyer"] == split[0])
    out["S_other"] = out["S"].where(episodes["buyer"] == split[1])
    return out


def _summaries(prepared: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per group: every metric of ``outcome_summary`` plus the buyer split."""
    groups = prepared.groupby(by, sort=False)
    table = groups[list(table_metrics()) + ["S_same", "S_other"]].mean()
    sums = groups[[f"sum:{c}" for c in SUM_COLUMNS]].sum().rename(columns=lambda c: c.removeprefix("sum:"))
    table.insert(0, "episodes", groups.size())
    with np.errstate(divide="ignore", invalid="ignore"):
        table["bad_parse_all"] = sums["n_bad_all"] / sums["n_turns"]
        table["bad_parse_seller"] = sums["n_bad_seller"] / sums["n_seller_turns"]
    table["buyer_split"] = table.pop("S_same") - table.pop("S_other")
    return table


def outcome_summary(episodes: pd.DataFrame, context: MetricContext) -> dict[str, float]:
    """Outcome metrics of one set of episodes.

    ``S`` is the mean score, so ``S = deal_rate·seller_u + (1 − deal_rate)·(−λ)`` holds
    exactly; utilities, welfare and their distributive/integrative parts are deal-only;
    bad-parse rates pool turns (sum of bad turns over sum of turns).
    """
    prepared = _prepared(episodes, context).assign(_one=0)
    row = _summaries(prepared, ["_one"]).iloc[0]
    return {key: float(value) for key, value in row.drop("buyer_split").items()}


def buyer_split(episodes: pd.DataFrame, split: tuple[str, str] | None) -> float:
    """Mean S against the same-family buyer minus mean S against the other (NaN if absent)."""
    if split is None:
        return float("nan")
    same, other = (episodes.loc[episodes["buyer"] == name, "S"].astype(float) for name in split)
    return float(same.mean() - other.mean()) if len(same) and len(other) else float("nan")


def metrics_table(frames: Mapping[str, pd.DataFrame], context: MetricContext) -> pd.DataFrame:
    """One row per (arm, panel) with every outcome metric and the buyer split.

    Panels: ``all``, ``training``, ``held_out``, ``buyer:<name>``, ``domain:<name>``.

    Args:
      frames: arm name -> episode table of that arm (validated: no error rows).
      context: the study's constants.
    """
    for arm, episodes in frames.items():
        require_columns(episodes, EPISODE_COLUMNS, arm)
    prepared = _prepared(pd.concat(list(frames.values()), ignore_index=True), context)
    family = prepared["domain"].map(
        {**{d: PANEL_TRAINING for d in context.training_domains}, **{d: PANEL_HELD_OUT for d in context.held_out_domains}})
    parts = [_summaries(prepared.assign(panel=PANEL_ALL), ["arm", "panel"]),
             _summaries(prepared.assign(panel=family).dropna(subset=["panel"]), ["arm", "panel"]),
             _summaries(prepared.assign(panel="buyer:" + prepared["buyer"].astype(str)), ["arm", "panel"]),
             _summaries(prepared.assign(panel="domain:" + prepared["domain"].astype(str)), ["arm", "panel"])]
    table = pd.concat(parts).reset_index()
    order = {arm: i for i, arm in enumerate(frames)}
    table = table.sort_values("arm", key=lambda arms: arms.map(order), kind="stable").reset_index(drop=True)
    table.loc[table["panel"].str.startswith("buyer:"), "buyer_split"] = np.nan
    return table.astype({"episodes": int})


def score_identity_gap(row: Mapping[str, float], context: MetricContext) -> float:
    """``S − [DR·Ũ_deal + (1 − DR)(−λ)]`` of a metrics row: zero up to rounding.

    An arm with no deal has ``seller_u`` NaN; its identity is ``S = −λ``.
    """
    deal_part = row["deal_rate"] * row["seller_u"] if row["deal_rate"] > 0 else 0.0
    return float(row["S"] - (deal_part + (1.0 - row["deal_rate"]) * -context.no_deal_penalty))


