"""Episode records as tables: one row per episode and one per turn (Parquet).

Values that are not scalars (ledgers, terms) are stored as canonical JSON strings (sorted
keys are NOT used for ledgers: their order is the order terms were first named).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from negotiation.env._engine import RECORD_VERSION, Episode, Negotiation, TurnRecord, bad_turns, rounds_of
from negotiation.env._reward import episode_reward
from negotiation.env._utility import Score

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


def episode_row(episode: Episode, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The episode table row of one episode; ``extra`` supplies arm, buyer label, study."""
    deal = episode.deal
    return _row(extra, episode.turns, domain=episode.domain, seed=episode.seed, sample_seed=episode.sample_seed,
                seller=episode.seller, buyer=episode.buyer, phase=episode.config.phase, outcome=episode.outcome,
                S=episode.S, scores=(episode.seller_score, episode.buyer_score) if deal else None,
                reward=episode_reward(episode), closed_by=episode.closed_by or "",
                closing_turn=float(episode.n_turns) if deal else math.nan,
                accept_had_terms=episode.accept_had_terms, final_ledger=episode.final_ledger)


def error_row(game: Negotiation, seller: str, buyer: str, extra: Mapping[str, Any], *, error_class: str,
              error_message: str, retries: int) -> dict[str, Any]:
    """The episode table row of an episode an agent call ended for good (``outcome = "error"``).

    The same columns, in the same order and of the same types, as ``episode_row``: NaN scores,
    reward and closing turn, the counts, tokens, cost and latency of the turns played before the
    failure, the ledger as it stood, and ``retries`` (the failed call's) added to theirs.
    """
    return _row(extra, game.turns, domain=game.scenario.domain.name, seed=game.scenario.seed,
                sample_seed=game.sample_seed, seller=seller, buyer=buyer, phase=game.config.phase, outcome="error",
                S=math.nan, scores=None, reward=math.nan, closed_by="", closing_turn=math.nan, accept_had_terms=False,
                final_ledger=game.ledger, error_class=error_class, error_message=error_message, retries=retries)


def _parts(scores: tuple[Score, Score] | None) -> dict[str, float]:
    """Seller and buyer utility and its parts on a deal; NaN otherwise."""
    if scores is None:
        return dict.fromkeys(("seller_u", "buyer_u", "seller_u_dist", "seller_u_integ", "buyer_u_dist",
                              "buyer_u_integ"), math.nan)
    s, b = scores
    return {"seller_u": s.u_tilde, "buyer_u": b.u_tilde, "seller_u_dist": s.distributive,
            "seller_u_integ": s.integrative, "buyer_u_dist": b.distributive, "buyer_u_integ": b.integrative}


def _row(extra: Mapping[str, Any], ts: Sequence[TurnRecord], *, domain: str, seed: int, sample_seed: int,
         seller: str, buyer: str, phase: str, outcome: str, S: float, scores: tuple[Score, Score] | None,
         reward: float, closed_by: str, closing_turn: float, accept_had_terms: bool,
         final_ledger: Mapping[str, Any], error_class: str = "", error_message: str = "", retries: int = 0
         ) -> dict[str, Any]:
    """The one definition of the episode table's columns, their order and their types."""
    parts = _parts(scores)
    return {
        "arm": "", "study": "", "buyer": buyer, **extra,
        "domain": domain, "seed": seed, "sample_seed": sample_seed,
        "seller": seller, "buyer_spec": buyer, "phase": phase,
        "outcome": outcome, "deal": outcome == "deal", "S": S,
        "seller_u": parts["seller_u"], "buyer_u": parts["buyer_u"],
        "seller_u_dist": parts["seller_u_dist"], "seller_u_integ": parts["seller_u_integ"],
        "buyer_u_dist": parts["buyer_u_dist"], "buyer_u_integ": parts["buyer_u_integ"],
        "reward": reward, "n_turns": len(ts), "n_rounds": rounds_of(len(ts)),
        "n_seller_turns": sum(1 for t in ts if t.role == "seller"), "n_bad_seller": bad_turns(ts, "seller"),
        "n_bad_all": bad_turns(ts), "closed_by": closed_by,
        "closing_turn": closing_turn, "accept_had_terms": accept_had_terms,
        "n_json_leak": sum(t.flags.get("json_leak", False) for t in ts),
        "n_placeholder": sum(t.flags.get("placeholder", False) for t in ts),
        "n_template_tag": sum(t.flags.get("template_tag", False) for t in ts),
        "n_off_schema": sum(t.n_off_schema for t in ts), "n_invalid": sum(t.n_invalid for t in ts),
        "n_out_of_range": sum(t.n_out_of_range for t in ts),
        "final_ledger": to_json(dict(final_ledger)),
        "tokens_in_seller": sum(t.reply.tokens_in for t in ts if t.role == "seller"),
        "tokens_out_seller": sum(t.reply.tokens_out for t in ts if t.role == "seller"),
        "tokens_in_buyer": sum(t.reply.tokens_in for t in ts if t.role == "buyer"),
        "tokens_out_buyer": sum(t.reply.tokens_out for t in ts if t.role == "buyer"),
        "cost": sum(t.reply.cost or 0.0 for t in ts), "retries": sum(t.reply.retries for t in ts) + retries,
        "latency_s": sum(t.reply.latency_s for t in ts),
        "error_class": error_class, "error_message": error_message, "record_version": RECORD_VERSION,
    }


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
