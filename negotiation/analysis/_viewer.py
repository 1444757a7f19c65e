"""Static transcript viewer: one self-contained HTML page over episode and turn tables.

Episodes are paired by ``(domain, seed, buyer)`` across arms, so the page shows two arms side
by side on the same scenario (arm A and arm B), sorts and filters the pairs by the paired
difference ΔS = S_A − S_B, by outcome, by per-turn flags (bad parse, JSON leak, placeholder,
template tag, off-schema name) and by text in the prose, and highlights each flagged turn.
Every control can be set from the query string (``transcripts.html?a=x&b=y&sort=dS&flag=json_leak``),
which is how the report's tables link to the transcripts behind a row.

The page is rendered by jinja2 with autoescaping; the data rides in a JSON script tag through
``tojson`` (which escapes ``<``, ``>``, ``&`` and ``'``, so ``</script>`` or ``<!--`` in a
transcript stays text) and is drawn with DOM text nodes only. It stays fast at tens of
thousands of episodes: episodes are compact arrays, each turn stores only the ledger entries
it changed, rows are drawn a page at a time and turns only when an episode is opened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation._atomic import write_atomic
from negotiation.analysis._metrics import require_columns
from negotiation.env import ledger_changes
from negotiation.analysis._viewer_page import render_page

FLAGS = ("json_leak", "placeholder", "template_tag", "bad_parse", "off_schema")
"""Flags a turn can carry (bit ``i`` of a turn's or an episode's mask is ``FLAGS[i]``)."""
OUTCOMES = ("deal", "no_deal", "error")
TURN_COLUMNS = ["arm", "domain", "seed", "buyer", "turn", "role", "prose", "ok", "action", "terms", "error",
                "ledger_after", "flag_json_leak", "flag_placeholder", "flag_template_tag", "n_off_schema"]
KEY = ["arm", "domain", "seed", "buyer"]
DATA_VERSION = 2


def _masks(turns: pd.DataFrame) -> list[int]:
    """Each turn's flag mask (bit ``i`` set when it carries ``FLAGS[i]``)."""
    bits = (turns["flag_json_leak"].astype(bool), turns["flag_placeholder"].astype(bool),
            turns["flag_template_tag"].astype(bool), ~turns["ok"].astype(bool), turns["n_off_schema"] > 0)
    mask = sum(bit.astype(int) * (1 << i) for i, bit in enumerate(bits))
    return [int(m) for m in mask.tolist()]


def _loads(text: Any, empty: Any) -> Any:
    return json.loads(text) if isinstance(text, str) and text else empty


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _turns_by_episode(turns: pd.DataFrame) -> dict[tuple, list[list[Any]]]:
    """Per episode key, its turns as ``[role (0 seller, 1 buyer), prose, ok, action, terms, error,
    ledger entries changed by the turn, flag mask]`` in turn order."""
    by_episode: dict[tuple, list[list[Any]]] = {}
    ledgers: dict[tuple, dict[str, Any]] = {}
    ordered = turns.sort_values([*KEY, "turn"])
    # Plain lists: iterating pandas' Arrow-backed string columns row by row is ten times slower.
    columns = [ordered[c].tolist() for c in ("arm", "domain", "seed", "buyer", "role", "prose", "ok", "action",
                                             "terms", "error", "ledger_after")]
    for *key_parts, role, prose, ok, action, terms, error, ledger_after, mask in zip(*columns, _masks(ordered)):
        key = tuple(key_parts)
        before = ledgers.get(key, {})
        after = _loads(ledger_after, {})
        changed = ledger_changes(before, after)
        ledgers[key] = after
        ok = bool(ok)
        by_episode.setdefault(key, []).append(
            [0 if role == "seller" else 1, _text(prose), int(ok), _text(action) if ok else "",
             _loads(terms, []), "" if ok else _text(error), changed, mask])
    return by_episode


def viewer_data(episodes: pd.DataFrame, turns: pd.DataFrame) -> dict[str, Any]:
    """The JSON the page renders.

    ``episodes`` rows are ``[arm, domain, seed, buyer, outcome, S, flag mask, turns]`` with arm,
    domain, buyer and outcome as indices into the lists of the same names and ``S`` rounded to
    4 decimals (``null`` for an error row); turns as in ``_turns_by_episode``.
    """
    require_columns(turns, TURN_COLUMNS, "turns")
    require_columns(episodes, [*KEY, "outcome", "S"], "episodes")
    by_episode = _turns_by_episode(turns)
    arms = sorted(episodes["arm"].astype(str).unique().tolist())
    domains = sorted(episodes["domain"].astype(str).unique().tolist())
    buyers = sorted(episodes["buyer"].astype(str).unique().tolist())
    index = {"arm": {v: i for i, v in enumerate(arms)}, "domain": {v: i for i, v in enumerate(domains)},
             "buyer": {v: i for i, v in enumerate(buyers)}, "outcome": {v: i for i, v in enumerate(OUTCOMES)}}
    rows = []
    for e in episodes.sort_values(KEY).itertuples(index=False):
        turn_list = by_episode.get((e.arm, e.domain, e.seed, e.buyer), [])
        mask = 0
        for turn in turn_list:
            mask |= turn[7]
        score = None if pd.isna(e.S) else round(float(e.S), 4)
        rows.append([index["arm"][str(e.arm)], index["domain"][str(e.domain)], int(e.seed),
                     index["buyer"][str(e.buyer)], index["outcome"].get(str(e.outcome), 2), score, mask, turn_list])
    return {"version": DATA_VERSION, "arms": arms, "domains": domains, "buyers": buyers, "outcomes": list(OUTCOMES),
            "flags": list(FLAGS), "episodes": rows}


def viewer_html(episodes: pd.DataFrame, turns: pd.DataFrame, *, title: str, note: str = "") -> str:
    """The page as one string (no external resources)."""
    return render_page(title=title, note=note, data=viewer_data(episodes, turns))


def write_viewer(path: Path, episodes: pd.DataFrame, turns: pd.DataFrame, *, title: str, note: str = "") -> Path:
    """Write the viewer page to ``path`` (atomically; a FIFO or folder there is a ``ConfigError``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, viewer_html(episodes, turns, title=title, note=note))
