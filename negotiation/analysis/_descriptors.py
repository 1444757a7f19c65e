"""Post-hoc descriptors of play from the turn table (Tables 2 and 6, Appendices A and E).

Per episode: whether the seller opens with terms and how many, whether its opening is in
the buyer's voice, off-schema names, and whether a no-deal is a walk-away. Per arm: the
three-word opener concentration, repeated openers, and leak and placeholder counts.
Every detector here is this project's definition, documented in docs/analysis.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable, Iterable, Mapping

import pandas as pd

from negotiation.analysis._errors import MetricError
from negotiation.analysis._metrics import require_columns
from negotiation.analysis._pairing import PAIR_KEY

TURN_COLUMNS = ("arm", "domain", "seed", "buyer", "turn", "role", "prose", "ok", "action", "terms",
                "ledger_after", "flag_json_leak", "flag_placeholder", "flag_template_tag", "n_off_schema")
"""Turn-table columns the descriptors read."""
EPISODE_KEY = ("arm", *PAIR_KEY)
"""One episode of one arm."""
OPENER_WORDS = 3
"""An opener is the first three words of a seller turn's prose."""
_WORD = re.compile(r"[a-z0-9']+")
BUYER_VOICE = re.compile(
    r"\b(?:i|we)(?:'m|'re| am| are)? (?:interested in|looking (?:to|for)|hoping to|keen to|here to) "
    r"(?:buy|purchas|acquir|get)"
    r"|\b(?:i|we)(?:'d| would) (?:like|love|want) to (?:buy|purchase|acquire)"
    r"|\bas (?:a|the) (?:buyer|purchaser)\b"
    r"|\bmy budget\b|\bour budget\b"
    r"|\bcan you (?:lower|reduce|come down on) (?:the )?price\b",
    re.IGNORECASE,
)
"""Buyer's-voice phrases in a seller's opening turn (a narrow lexical detector)."""
CONCESSION_EPSILON = 1e-9
"""A seller utility drop larger than this between its turns counts as a concession."""


def opener(prose: str) -> str | None:
    """The first three lower-cased words of ``prose``, or None when it has fewer."""
    words = _WORD.findall(str(prose).lower())
    return " ".join(words[:OPENER_WORDS]) if len(words) >= OPENER_WORDS else None


def named_terms(terms_json: str, where: str = "turns") -> list[str]:
    """Term names of a turn's parsed action (``[[name, value], ...]`` JSON)."""
    try:
        items = json.loads(terms_json) if terms_json else []
    except json.JSONDecodeError:
        raise MetricError(where, "terms", f"not JSON: {terms_json[:60]!r}") from None
    return [str(item[0]) for item in items if isinstance(item, (list, tuple)) and item]


def _opening_rows(turns: pd.DataFrame) -> pd.DataFrame:
    return turns[(turns["turn"] == 1) & (turns["role"] == "seller")]


def episode_descriptors(turns: pd.DataFrame, term_names: Mapping[str, Iterable[str]]) -> pd.DataFrame:
    """Per-episode descriptors keyed by ``arm, domain, seed, buyer``.

    Columns: ``opens_with_terms`` (the seller's turn 1 names ≥ 1 schema term),
    ``terms_at_open`` (distinct schema terms named then), ``open_term_share`` (of the
    domain's terms), ``buyer_voice_open``, ``seller_terms_named`` and
    ``seller_off_schema_named`` (over all the seller's actions).
    """
    require_columns(turns, TURN_COLUMNS, "turns")
    schema = {domain: set(names) for domain, names in term_names.items()}
    missing = sorted(set(turns["domain"]) - set(schema))
    if missing:
        raise MetricError("turns", "domain", f"no term list for domain {missing[0]!r}")
    opening = _opening_rows(turns).copy()
    opening["terms_at_open"] = [
        len(set(named_terms(terms)) & schema[domain]) for terms, domain in zip(opening["terms"], opening["domain"])
    ]
    opening["opens_with_terms"] = opening["terms_at_open"] > 0
    opening["open_term_share"] = opening["terms_at_open"] / opening["domain"].map(lambda d: len(schema[d]))
    opening["buyer_voice_open"] = opening["prose"].map(lambda text: bool(BUYER_VOICE.search(str(text))))
    seller = turns[turns["role"] == "seller"].copy()
    seller["named"] = seller["terms"].map(lambda terms: len(named_terms(terms)))
    named = seller.groupby(list(EPISODE_KEY))[["named", "n_off_schema"]].sum()
    named.columns = ["seller_terms_named", "seller_off_schema_named"]
    columns = ["opens_with_terms", "terms_at_open", "open_term_share", "buyer_voice_open"]
    return opening.set_index(list(EPISODE_KEY))[columns].join(named, how="outer").reset_index()


def off_schema_on_ledger(final_ledger: str, names: Iterable[str]) -> bool:
    """True when a closing ledger (JSON object) holds a name outside the schema."""
    ledger = json.loads(final_ledger) if final_ledger else {}
    return bool(set(ledger) - set(names))


def style_summary(turns: pd.DataFrame) -> pd.DataFrame:
    """Per-arm style descriptors over the seller's turns.

    Columns: ``seller_turns``, ``top_opener`` and ``top_opener_share`` (most common
    three-word opener), ``top3_opener_share``, ``repeated_opener_rate`` (turns whose
    opener the seller already used earlier in the same episode), ``json_leak_share``,
    ``placeholder_count``, ``template_tag_count`` (all turns, both roles: a tag leak
    anywhere reaches the other party), ``bad_parse_seller``.
    """
    require_columns(turns, TURN_COLUMNS, "turns")
    rows = []
    for arm, arm_turns in turns.groupby("arm", sort=True):
        seller = arm_turns[arm_turns["role"] == "seller"].sort_values(list(EPISODE_KEY) + ["turn"])
        openers = seller["prose"].map(opener)
        counts = Counter(openers.dropna())
        top = counts.most_common(3)
        # Sorted by turn, a row "duplicated" within (episode, opener) repeats an earlier opener.
        repeated = openers.notna() & seller.assign(o=openers).duplicated(subset=[*EPISODE_KEY, "o"])
        total = len(seller)
        rows.append({
            "arm": arm, "seller_turns": total,
            "top_opener": top[0][0] if top else "",
            "top_opener_share": top[0][1] / total if top else 0.0,
            "top3_opener_share": sum(n for _, n in top) / total if total else 0.0,
            "repeated_opener_rate": float(repeated.sum()) / total if total else 0.0,
            "json_leak_share": float(seller["flag_json_leak"].astype(bool).mean()) if total else 0.0,
            "placeholder_count": int(seller["flag_placeholder"].astype(bool).sum()),
            "template_tag_count": int(arm_turns["flag_template_tag"].astype(bool).sum()),
            "bad_parse_seller": float((~seller["ok"].astype(bool)).mean()) if total else 0.0,
        })
    return pd.DataFrame(rows)


def walk_aways(
    turns: pd.DataFrame, episodes: pd.DataFrame, seller_utility: Callable[[str, int, dict], float]
) -> pd.Series:
    """Walk-away flag per no-deal episode: the seller never conceded across its turns.

    A concession is a fall in the seller's own Ũ of the ledger between consecutive seller
    turns (its counter left the ledger worse for itself than its previous one did).

    Args:
      seller_utility: ``(domain, seed, ledger) -> seller Ũ`` (the environment's scoring).

    Returns:
      Boolean series indexed by ``arm, domain, seed, buyer`` over the no-deal episodes.
    """
    no_deal = episodes.loc[~episodes["deal"].astype(bool), list(EPISODE_KEY)]
    keyed = turns[turns["role"] == "seller"].merge(no_deal, on=list(EPISODE_KEY))
    flags = {}
    for key, rows in keyed.sort_values("turn").groupby(list(EPISODE_KEY), sort=True):
        utilities = [seller_utility(key[1], int(key[2]), json.loads(ledger)) for ledger in rows["ledger_after"]]
        flags[key] = not any(b < a - CONCESSION_EPSILON for a, b in zip(utilities, utilities[1:]))
    # keyed by name even when every episode is a deal (no flags): callers select by the ``arm`` level
    index = pd.MultiIndex.from_tuples(list(flags), names=list(EPISODE_KEY)) if flags else \
        pd.MultiIndex.from_arrays([[]] * len(EPISODE_KEY), names=list(EPISODE_KEY))
    return pd.Series(list(flags.values()), index=index, dtype=bool)


def env_seller_utility(alpha: float) -> Callable[[str, int, dict], float]:
    """``(domain, seed, ledger) -> seller Ũ`` through the environment (Dirichlet ``alpha``
    of the study), scenarios cached."""
    from functools import lru_cache

    from negotiation.env import load_domain, make_scenario, score_ledger

    @lru_cache(maxsize=4096)
    def scenario(domain: str, seed: int):
        return make_scenario(load_domain(domain), seed, alpha)

    return lambda domain, seed, ledger: score_ledger(scenario(domain, seed), "seller", ledger).u_tilde


def descriptor_summary(
    descriptors: pd.DataFrame,
    episodes: pd.DataFrame,
    term_names: Mapping[str, Iterable[str]],
    held_out_domains: Iterable[str],
    walk_away_flags: pd.Series | None = None,
) -> pd.DataFrame:
    """Per-arm shares of the per-episode descriptors.

    Columns: ``opens_with_terms`` (share of episodes), ``terms_at_open`` and
    ``open_term_share`` (means over the episodes that open with terms),
    ``buyer_voice_held_out`` (share of held-out episodes), ``off_schema_share`` (of the
    names the seller put in its actions), ``off_schema_deal_share`` (deals closing with
    an off-schema name on the ledger), ``walk_away_rate`` (share of all episodes).
    """
    held_out = set(held_out_domains)
    rows = []
    for arm, desc in descriptors.groupby("arm", sort=True):
        arm_episodes = episodes[episodes["arm"] == arm]
        deals = arm_episodes[arm_episodes["deal"].astype(bool)]
        openers = desc[desc["opens_with_terms"].fillna(False).astype(bool)]
        on_held_out = desc[desc["domain"].isin(held_out)]
        named = desc["seller_terms_named"].sum()
        off_ledger = [off_schema_on_ledger(ledger, term_names[domain])
                      for ledger, domain in zip(deals["final_ledger"], deals["domain"])]
        walk = walk_away_flags[walk_away_flags.index.get_level_values("arm") == arm] if walk_away_flags is not None else None
        rows.append({
            "arm": arm,
            "opens_with_terms": float(desc["opens_with_terms"].fillna(False).astype(bool).mean()),
            "terms_at_open": float(openers["terms_at_open"].mean()) if len(openers) else float("nan"),
            "open_term_share": float(openers["open_term_share"].mean()) if len(openers) else float("nan"),
            "buyer_voice_held_out": float(on_held_out["buyer_voice_open"].astype(bool).mean())
            if len(on_held_out) else float("nan"),
            "off_schema_share": float(desc["seller_off_schema_named"].sum() / named) if named else 0.0,
            "off_schema_deal_share": float(sum(off_ledger) / len(off_ledger)) if off_ledger else float("nan"),
            "walk_away_rate": float(walk.sum() / len(arm_episodes)) if walk is not None and len(arm_episodes)
            else float("nan"),
        })
    return pd.DataFrame(rows)
