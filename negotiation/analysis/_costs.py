"""Frontier cost per episode from token counts (Table 7's reference point, Appendix G).

Per (reference seller, evaluation buyer) cell: the episode table's seller and buyer token counts,
each side billed at its model's price (``negotiation.study.TokenPrices``: the seller's model from
its ``litellm:`` spec, the buyer's from the protocol's evaluation buyer spec), then the mean over
the cells, the paper's "mean over the four frontier-seller cells ... with both sides billed". A cell
without token columns or with an unpriced model has no cost ('—'), never zero.
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from negotiation.study import spec_model

__all__ = ["TOKEN_COLUMNS", "frontier_costs"]

TOKEN_COLUMNS = ("tokens_in_seller", "tokens_out_seller", "tokens_in_buyer", "tokens_out_buyer")
"""Episode-table token counts, per side."""


def _bill(tokens_in: float, tokens_out: float, price) -> float | None:
    return None if price is None else (tokens_in * price.usd_per_mtok_in + tokens_out * price.usd_per_mtok_out) / 1e6


def frontier_costs(frames: Mapping[str, pd.DataFrame], arms: Mapping[str, Any], protocol, prices) -> pd.DataFrame:
    """One row per (reference arm, buyer) cell: episodes, tokens in and out (both sides), dollars and
    dollars per episode; ``prices`` is a ``TokenPrices`` or None (no dollars)."""
    table = prices.prices if prices is not None else {}
    rows = []
    for name, frame in frames.items():
        arm = arms.get(name)
        if arm is None or arm.kind != "reference":
            continue
        seller_price = table.get(spec_model(arm.seller))
        for buyer, cell in frame.groupby("buyer", sort=True):
            has_tokens = all(c in cell.columns for c in TOKEN_COLUMNS)
            spent = {c: float(cell[c].fillna(0).sum()) if has_tokens else float("nan") for c in TOKEN_COLUMNS}
            buyer_spec = protocol.buyers.evaluation[buyer].spec if buyer in protocol.buyers.evaluation else ""
            sides = [_bill(spent["tokens_in_seller"], spent["tokens_out_seller"], seller_price),
                     _bill(spent["tokens_in_buyer"], spent["tokens_out_buyer"], table.get(spec_model(buyer_spec)))]
            dollars = None if not has_tokens or None in sides else sum(sides)
            rows.append({"arm": name, "buyer": buyer, "episodes": len(cell),
                         "tokens_in": spent["tokens_in_seller"] + spent["tokens_in_buyer"],
                         "tokens_out": spent["tokens_out_seller"] + spent["tokens_out_buyer"],
                         "usd": dollars, "usd_per_episode": None if dollars is None else dollars / len(cell)})
    return pd.DataFrame(rows, columns=["arm", "buyer", "episodes", "tokens_in", "tokens_out", "usd",
                                       "usd_per_episode"])
