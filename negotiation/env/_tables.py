"""Episode records as tables: one row per episode and one per turn (Parquet).

Values that are not scalars (ledgers, terms) are stored as canonical JSON strings (sorted
keys are NOT used for ledgers: their order is the order terms were first named).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from negotiation.env._engine import RECORD_VERSION, Episode
from negotiation.env._reward import episode_reward

if TYPE_CHECKING:  # pandas costs ~0.2 s to import; `nego play` builds rows without it
    import pandas as pd

KEY = ["arm", "domain", "seed", "buyer"]


def to_json(value: Any) -> str:
    """Compact JSON for ledgers and term lists (non-JSON values as their repr).

    Text that cannot be stored as UTF-8 (a lone surrogate decoded from a ``\\ud800`` escape in
    a model's JSON) is written with ASCII escapes instead, so the tables can always be written.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, separators=(",", ":"), default=repr)
    return text


def _closing_turn(episode: Episode) -> float:
    return float(episode.n_turns) if episode.deal else math.nan


def episode_row(episode: Episode, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The episode table row of one episode; ``extra`` supplies arm, buyer label, study."""
    ts = episode.turns
    deal = episode.deal
    s, b = episode.seller_score, episode.buyer_score
    nan = math.nan
    row = {
        "arm": "", "study": "", "buyer": episode.buyer, **extra,
        "domain": episode.domain, "seed": episode.seed, "sample_seed": episode.sample_seed,
        "seller": episode.seller, "buyer_spec": episode.buyer, "phase": episode.config.phase,
        "outcome": episode.outcome, "deal": deal, "S": episode.S,
        "seller_u": s.u_tilde if deal else nan, "buyer_u": b.u_tilde if deal else nan,
        "seller_u_dist": s.distributive if deal else nan, "seller_u_integ": s.integrative if deal else nan,
        "buyer_u_dist": b.distributive if deal else nan, "buyer_u_integ": b.integrative if deal else nan,
        "reward": episode_reward(episode), "n_turns": episode.n_turns, "n_rounds": episode.n_rounds,
        "n_seller_turns": episode.n_turns_of("seller"), "n_bad_seller": episode.n_bad("seller"),
        "n_bad_all": episode.n_bad(), "closed_by": episode.closed_by or "",
        "closing_turn": _closing_turn(episode), "accept_had_terms": episode.accept_had_terms,
        "n_json_leak": sum(t.flags.get("json_leak", False) for t in ts),
        "n_placeholder": sum(t.flags.get("placeholder", False) for t in ts),
        "n_template_tag": sum(t.flags.get("template_tag", False) for t in ts),
        "n_off_schema": sum(t.n_off_schema for t in ts), "n_invalid": sum(t.n_invalid for t in ts),
        "n_out_of_range": sum(t.n_out_of_range for t in ts),
        "final_ledger": to_json(dict(episode.final_ledger)),
        "tokens_in_seller": sum(t.reply.tokens_in for t in ts if t.role == "seller"),
        "tokens_out_seller": sum(t.reply.tokens_out for t in ts if t.role == "seller"),
        "tokens_in_buyer": sum(t.reply.tokens_in for t in ts if t.role == "buyer"),
        "tokens_out_buyer": sum(t.reply.tokens_out for t in ts if t.role == "buyer"),
        "cost": sum(t.reply.cost or 0.0 for t in ts), "retries": sum(t.reply.retries for t in ts),
        "latency_s": sum(t.reply.latency_s for t in ts),
        "error_class": "", "error_message": "", "record_version": RECORD_VERSION,
    }
    return row


def turn_rows(episode: Episode, extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The turn table rows of one episode."""
    base = {"arm": "", "buyer": episode.buyer, **{k: v for k, v in extra.items() if k in ("arm", "buyer", "study")}}
    return [
        {**base, "domain": episode.domain, "seed": episode.seed, "turn": t.turn, "role": t.role,
         "raw": t.raw, "prose": t.prose, "ok": t.ok, "action": t.action or "",
         "terms": to_json([[n, v] for n, v in t.terms]), "error": t.error or "",
         "ledger_after": to_json(dict(t.ledger_after)),
         "flag_json_leak": bool(t.flags.get("json_leak")), "flag_placeholder": bool(t.flags.get("placeholder")),
         "flag_template_tag": bool(t.flags.get("template_tag")), "n_off_schema": t.n_off_schema,
         "n_invalid": t.n_invalid, "n_out_of_range": t.n_out_of_range,
         "tokens_in": t.reply.tokens_in, "tokens_out": t.reply.tokens_out}
        for t in episode.turns
    ]


def episodes_to_frames(episodes: Iterable[Episode], extra: Mapping[str, Any] | None = None
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(episodes_df, turns_df)`` for episodes sharing the same ``extra`` columns."""
    import pandas as pd

    extra = dict(extra or {})
    eps = list(episodes)
    ep_df = pd.DataFrame([episode_row(e, extra) for e in eps])
    tn_df = pd.DataFrame([r for e in eps for r in turn_rows(e, extra)])
    return ep_df, tn_df


def write_tables(episodes_df: pd.DataFrame, turns_df: pd.DataFrame, out_dir: Path) -> tuple[Path, Path]:
    """Write ``episodes.parquet`` and ``turns.parquet`` (deterministic bytes for equal frames)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = out / "episodes.parquet", out / "turns.parquet"
    episodes_df.to_parquet(paths[0], index=False)
    turns_df.to_parquet(paths[1], index=False)
    return paths
