"""Accounting: per-arm totals of tokens, dollars, latency and retries, and $ per episode.

The paper reports $0.069 per episode for its frontier cells (both sides billed at list prices).
``arm_accounting`` gives that figure per arm from the episode table: total cost over the
episodes, both sides included, and only when every priced turn had a known price
(``cost_known``); otherwise ``usd_per_episode`` is ``None`` rather than an underestimate.
Error rows count: their tokens and retries were spent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation._atomic import write_atomic

ACCOUNTING_VERSION = 1
_TOKENS = ("tokens_in_seller", "tokens_out_seller", "tokens_in_buyer", "tokens_out_buyer")


def _num(value: Any) -> float | int | None:
    if value is None:
        return None
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isnan(value) else value


def _totals(rows: pd.DataFrame) -> dict[str, Any]:
    n = len(rows)
    ok = rows[rows["outcome"] != "error"]
    known = bool(rows.get("cost_known", pd.Series([True] * n)).fillna(False).astype(bool).all()) if n else True
    cost = float(rows["cost"].fillna(0.0).sum()) if "cost" in rows else 0.0
    out: dict[str, Any] = {
        "episodes": n, "error_rows": n - len(ok), "deals": int(ok["deal"].astype(bool).sum()) if len(ok) else 0,
        "deal_rate": _num(ok["deal"].astype(bool).mean()) if len(ok) else None,
        "mean_S": _num(ok["S"].mean()) if len(ok) else None,
        **{c: int(rows[c].fillna(0).sum()) if c in rows else 0 for c in _TOKENS},
        "retries": int(rows["retries"].fillna(0).sum()) if "retries" in rows else 0,
        "latency_s_per_episode": _num(rows["latency_s"].mean()) if "latency_s" in rows and n else None,
        "cost_usd": cost if known else None, "cost_known": known,
        "usd_per_episode": cost / n if known and n else None,
    }
    return out


def arm_accounting(episodes: pd.DataFrame) -> dict[str, Any]:
    """``{arm: totals, with a per-buyer breakdown}`` from an episode table."""
    if episodes.empty:
        return {}
    result: dict[str, Any] = {}
    for arm, rows in episodes.groupby("arm", sort=True):
        totals = _totals(rows)
        totals["by_buyer"] = {str(b): _totals(r) for b, r in rows.groupby("buyer", sort=True)}
        result[str(arm)] = totals
    return result


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write JSON atomically (sorted keys, so equal payloads give equal bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def write_accounting(root: Path, episodes: pd.DataFrame) -> Path:
    """``<root>/accounting.json``: the per-arm totals."""
    return write_json(Path(root) / "accounting.json",
                      {"version": ACCOUNTING_VERSION, "arms": arm_accounting(episodes)})
