"""Two post-hoc descriptors of §5 and Appendix E that need the environment's scoring or the ledger.

*Value of the opening offer* (§5: "accepted as they stand, those openings would score 0.741 and
0.757 for the seller, and the deals they lead to score 0.128 and 0.135 lower"): over the episodes in
which the seller's turn 1 names at least one schema term, the seller's Ũ of the ledger after that
turn, and over those that closed, the deal's seller Ũ minus it.

*Closing turns that name the concession* (App. E: "54.1% of its closing turns name the concession
being traded, against 18.0% for the 12B 3× LR arm"): the paper gives no detector. This project's:
a deal the seller closes with its ACCEPT; the concession is the set of terms the buyer's preceding
turn changed on the ledger; the closing turn names it when its prose mentions one of those terms by
name (underscores read as spaces) or by its new level (categorical terms), case-insensitively.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from negotiation.analysis._descriptors import EPISODE_KEY, named_terms
from negotiation.env import ledger_changes

__all__ = ["STRATEGY_COLUMNS", "names_concession", "strategy_summary"]

STRATEGY_COLUMNS = ("open_offer_u", "deal_minus_open_u", "closers_naming_concession")
"""Per-arm columns ``strategy_summary`` returns."""


def names_concession(prose: str, changed: Mapping[str, object]) -> bool:
    """True when ``prose`` mentions a changed term by name or by its new (string) level."""
    text = str(prose).lower()
    for name, value in changed.items():
        words = [name.replace("_", " ")] + ([str(value)] if isinstance(value, str) and value else [])
        if any(re.search(rf"\b{re.escape(w.lower())}\b", text) for w in words):
            return True
    return False


def _closing_rows(turns: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    deals = episodes[episodes["deal"].astype(bool) & (episodes["closed_by"] == "seller")]
    closing = deals[[*EPISODE_KEY, "closing_turn"]].rename(columns={"closing_turn": "turn"})
    closing = closing.assign(turn=pd.to_numeric(closing["turn"]).astype(int))
    return turns.merge(closing, on=[*EPISODE_KEY, "turn"])


def _previous_ledgers(turns: pd.DataFrame, rows: pd.DataFrame, back: int) -> pd.Series:
    earlier = turns[[*EPISODE_KEY, "turn", "ledger_after"]].assign(turn=turns["turn"] + back)
    merged = rows[[*EPISODE_KEY, "turn"]].merge(earlier, on=[*EPISODE_KEY, "turn"], how="left")
    return merged["ledger_after"].fillna("{}")


def _concession_share(turns: pd.DataFrame, episodes: pd.DataFrame) -> pd.Series:
    closing = _closing_rows(turns, episodes)
    if closing.empty:
        return pd.Series(dtype=float)
    before, offer = _previous_ledgers(turns, closing, 2), _previous_ledgers(turns, closing, 1)
    named = [names_concession(prose, ledger_changes(json.loads(b), json.loads(o)))
             for prose, b, o in zip(closing["prose"], before, offer)]
    return pd.Series(named, index=closing["arm"].to_numpy()).groupby(level=0).mean()


def strategy_summary(turns: pd.DataFrame, episodes: pd.DataFrame, term_names: Mapping[str, Iterable[str]],
                     seller_utility: Callable[[str, int, dict], float]) -> pd.DataFrame:
    """Per arm (index): ``open_offer_u``, ``deal_minus_open_u`` and ``closers_naming_concession``.

    Args:
      turns: every arm's turn table (``TURN_COLUMNS``).
      episodes: every arm's episode table.
      seller_utility: ``(domain, seed, ledger) -> seller Ũ`` (``env_seller_utility``).
    """
    schema = {domain: set(names) for domain, names in term_names.items()}
    opening = turns[(turns["turn"] == 1) & (turns["role"] == "seller")]
    opens = [bool(set(named_terms(t)) & schema[d]) for t, d in zip(opening["terms"], opening["domain"])]
    opening = opening[np.array(opens, dtype=bool)] if len(opening) else opening
    value = [seller_utility(d, int(s), json.loads(ledger))
             for d, s, ledger in zip(opening["domain"], opening["seed"], opening["ledger_after"])]
    opening = opening.assign(open_u=value).merge(episodes[[*EPISODE_KEY, "deal", "seller_u"]], on=list(EPISODE_KEY))
    closed = opening[opening["deal"].astype(bool)]
    arms = sorted(set(episodes["arm"]))
    out = pd.DataFrame(index=pd.Index(arms, name="arm"), columns=list(STRATEGY_COLUMNS), dtype=float)
    out["open_offer_u"] = opening.groupby("arm")["open_u"].mean()
    out["deal_minus_open_u"] = (closed["seller_u"].astype(float) - closed["open_u"]).groupby(closed["arm"]).mean()
    out["closers_naming_concession"] = _concession_share(turns, episodes).astype(float)
    return out
