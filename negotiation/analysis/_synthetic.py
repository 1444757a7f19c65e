"""Synthetic episode and turn tables with the contract's columns, for benchmarks and tests.

Every arm meets the protocol's full evaluation grid (domains x evaluation seeds x
evaluation buyers). A deal's utilities come from a random full contract of the real
scenario (so deals lie inside the exact frontier); arms differ by a per-arm deal rate,
a pull towards the seller's end of the contract space and an opener vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from negotiation.analysis._efficiency import problem_from_scenario
from negotiation.study import ResultsLayout

OPENERS = ("thanks for your", "i appreciate your", "let me propose", "happy to help", "i hear you")
"""Opener vocabulary; an arm's ``concentration`` is the chance it uses the first one."""


def _scenarios(protocol) -> list[tuple[str, int, Any]]:
    from negotiation.env import load_domain, make_scenario

    domains = [*protocol.domains.training, *protocol.domains.held_out]
    seeds = range(protocol.seeds.evaluation.start, protocol.seeds.evaluation.stop)
    out = []
    for name in domains:
        domain = load_domain(name)
        for seed in seeds:
            scenario = make_scenario(domain, seed, protocol.environment.dirichlet_alpha)
            out.append((name, seed, problem_from_scenario(scenario), domain))
    return out


def _deal_utilities(mapped, pull: float, rng: np.random.Generator) -> tuple[float, float, float, float]:
    """Seller/buyer Ũ and their distributive parts for a random full contract."""
    problem = mapped.problem
    shares = np.clip(rng.beta(2 + 4 * pull, 2 + 4 * (1 - pull), size=len(problem.transfers)), 0, 1)
    wins = rng.random(len(problem.choices)) < pull
    seller_dist = float((problem.transfers[:, 0] * shares).sum())
    buyer_dist = float((problem.transfers[:, 1] * (1 - shares)).sum())
    seller = problem.constant[0] + seller_dist + problem.choices[wins, 0].sum()
    buyer = problem.constant[1] + buyer_dist + problem.choices[~wins, 1].sum()
    # The constant terms are split between classes by the scenario; for a synthetic table
    # it is enough that the two parts sum exactly to the utility.
    return float(seller), float(buyer), seller_dist, buyer_dist


def _turns(arm: str, domain, seed: int, buyer: str, n_turns: int, profile: Mapping[str, float],
           rng: np.random.Generator, deal: bool = False) -> list[dict[str, Any]]:
    price = next(t for t in domain.terms if t.is_continuous)
    lo, hi = price.range
    rows = []
    for turn in range(1, n_turns + 1):
        role = "seller" if turn % 2 else "buyer"
        words = OPENERS[0] if rng.random() < profile["concentration"] else OPENERS[int(rng.integers(1, len(OPENERS)))]
        named = [[t.name, lo] for t in domain.terms[:3]] if turn == 1 and rng.random() < profile["opens"] else []
        value = hi - (hi - lo) * turn / (2 * n_turns)
        rows.append({
            "arm": arm, "domain": domain.name, "seed": seed, "buyer": buyer, "turn": turn, "role": role,
            "raw": f"{words} offer today. We can do {value:.1f}.", "prose": f"{words} offer today. We can do {value:.1f}.",
            "ok": bool(rng.random() > profile["bad_parse"]),
            "action": "ACCEPT" if deal and turn == n_turns else "COUNTER",
            "terms": json.dumps(named + [[price.name, round(value, 3)]]), "error": "",
            "ledger_after": json.dumps({price.name: round(value, 3)}),
            "flag_json_leak": bool(role == "seller" and rng.random() < profile["leak"]),
            "flag_placeholder": False, "flag_template_tag": False,
            "n_off_schema": 0, "n_invalid": 0, "n_out_of_range": 0,
        })
    return rows


def _profile(index: int, rng: np.random.Generator) -> dict[str, float]:
    return {"deal": float(rng.uniform(0.88, 1.0)), "pull": float(rng.uniform(0.35, 0.65)),
            "concentration": float(rng.uniform(0.1, 0.4)), "opens": float(rng.uniform(0.0, 0.9)),
            "bad_parse": float(rng.uniform(0.0, 0.01)), "leak": float(rng.uniform(0.0, 0.05)),
            "turns": float(rng.uniform(8, 14)) + index % 2}


def synthetic_tables(protocol, arms: Sequence[str], seed: int, *, with_turns: bool = True,
                     no_deal_penalty: float | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """``(episodes, turns)`` per arm over the protocol's evaluation grid, seeded."""
    rng = np.random.default_rng(seed)
    penalty = protocol.environment.no_deal_penalty if no_deal_penalty is None else no_deal_penalty
    cap = protocol.environment.turn_cap
    buyers = sorted(protocol.buyers.evaluation)
    scenarios = _scenarios(protocol)
    episodes, turns = {}, {}
    for index, arm in enumerate(arms):
        profile = _profile(index, rng)
        rows, turn_rows = [], []
        for name, scenario_seed, mapped, domain in scenarios:
            for buyer in buyers:
                deal = bool(rng.random() < profile["deal"])
                n_turns = int(np.clip(rng.poisson(profile["turns"]), 2, cap)) if deal else cap
                s_u, b_u, s_d, b_d = _deal_utilities(mapped, profile["pull"], rng) if deal else (np.nan,) * 4
                episode_turns = (_turns(arm, domain, scenario_seed, buyer, n_turns, profile, rng, deal)
                                 if with_turns else [])
                bad_seller = sum(not t["ok"] for t in episode_turns if t["role"] == "seller")
                bad_all = sum(not t["ok"] for t in episode_turns)
                rows.append({
                    "arm": arm, "study": protocol.study, "domain": name, "seed": scenario_seed, "buyer": buyer,
                    "seller": f"synthetic:{arm}", "phase": "eval", "outcome": "deal" if deal else "no_deal",
                    "deal": deal, "S": s_u if deal else -penalty, "seller_u": s_u, "buyer_u": b_u,
                    "seller_u_dist": s_d, "seller_u_integ": s_u - s_d, "buyer_u_dist": b_d,
                    "buyer_u_integ": b_u - b_d, "reward": s_u if deal else -penalty, "n_turns": n_turns,
                    "n_rounds": (n_turns + 1) // 2, "n_seller_turns": (n_turns + 1) // 2, "n_bad_seller": bad_seller,
                    "n_bad_all": bad_all, "closed_by": ("seller" if n_turns % 2 else "buyer") if deal else "",
                    "closing_turn": float(n_turns) if deal else np.nan, "accept_had_terms": False,
                    "n_json_leak": 0, "n_placeholder": 0, "n_template_tag": 0, "n_off_schema": 0, "n_invalid": 0,
                    "n_out_of_range": 0, "final_ledger": "{}", "error_class": "", "error_message": "",
                    "record_version": 1,
                    # Token counts grow with the turns (no draw, so every other column is unchanged).
                    "tokens_in_seller": 1400 * ((n_turns + 1) // 2), "tokens_out_seller": 180 * ((n_turns + 1) // 2),
                    "tokens_in_buyer": 1500 * (n_turns // 2), "tokens_out_buyer": 200 * (n_turns // 2),
                })
                turn_rows += episode_turns
        episodes[arm] = pd.DataFrame(rows)
        turns[arm] = pd.DataFrame(turn_rows) if with_turns else pd.DataFrame()
    return episodes, turns


def write_synthetic_results(protocol, arms: Sequence[str], results: Path, seed: int) -> ResultsLayout:
    """Write ``synthetic_tables`` of ``arms`` where the evaluate stage writes its tables under
    ``results`` (``evaluate/<arm>/{episodes,turns}.parquet``); returns the folder's layout."""
    layout = ResultsLayout(Path(results))
    episodes, turns = synthetic_tables(protocol, arms, seed=seed)
    for arm in episodes:
        layout.evaluate(arm).mkdir(parents=True)
        episodes[arm].to_parquet(layout.episodes(arm), index=False)
        turns[arm].to_parquet(layout.turns(arm), index=False)
    return layout
