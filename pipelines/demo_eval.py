"""DVC stage ``demo_eval``: the study's scripted reference sellers against its evaluation buyers.

Every seller arm of kind ``reference`` with a ``scripted:`` spec (from the frozen arm matrix)
meets every evaluation buyer (from the protocol) on every evaluated domain and on the first
``--seeds`` seeds of the evaluation block. Writes ``episodes.parquet``, ``turns.parquet`` and
``metrics.json`` under ``--out``. Issue #7 replaces this stage with the full study pipeline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from negotiation.agents import make_agent
from negotiation.cli import env_config_for
from negotiation.env import episodes_to_frames, load_domain, make_scenario, run_episode, write_tables
from negotiation.protocol import load_study


def play_cells(study_name: str, n_seeds: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episode and turn tables of every (scripted reference arm, buyer, domain, seed) cell."""
    study = load_study(study_name)
    protocol = study.protocol
    config = env_config_for(study_name, "evaluation")
    seeds = list(protocol.seeds.evaluation.seeds())[:n_seeds]
    sellers = {name: arm.seller for name, arm in study.arms.items()
               if arm.kind == "reference" and arm.seller.startswith("scripted:")}
    if not sellers:
        raise SystemExit(f"protocol/{study_name}/arms.yaml has no scripted reference seller to evaluate")
    scenarios = [make_scenario(load_domain(d), s, protocol.environment.dirichlet_alpha)
                 for d in protocol.domains.evaluated for s in seeds]
    frames = []
    for arm, seller_spec in sellers.items():
        seller = make_agent(seller_spec, "seller")
        for buyer_name, buyer_def in protocol.buyers.evaluation.items():
            buyer = make_agent(buyer_def.spec, "buyer")
            episodes = [run_episode(sc, seller, buyer, config) for sc in scenarios]
            frames.append(episodes_to_frames(episodes, {"arm": arm, "study": study_name, "buyer": buyer_name}))
    return (pd.concat([f[0] for f in frames], ignore_index=True),
            pd.concat([f[1] for f in frames], ignore_index=True))


def summarize(episodes: pd.DataFrame) -> dict:
    """Per arm and overall: episodes, deal rate, mean S, deal-only seller Ũ, turns, parse failures."""
    def block(df: pd.DataFrame) -> dict:
        deals = df[df["deal"]]
        return {"episodes": int(len(df)), "deal_rate": float(df["deal"].mean()), "mean_S": float(df["S"].mean()),
                "deal_seller_u": float(deals["seller_u"].mean()) if len(deals) else None,
                "mean_turns": float(df["n_turns"].mean()),
                "parse_failure_rate": float(df["n_bad_seller"].sum() / df["n_seller_turns"].sum())}

    return {"overall": block(episodes), "arms": {arm: block(df) for arm, df in episodes.groupby("arm", sort=True)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", required=True, help="study under protocol/, e.g. demo")
    parser.add_argument("--seeds", type=int, required=True, help="first N seeds of the evaluation block")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    args = parser.parse_args()
    episodes, turns = play_cells(args.study, args.seeds)
    write_tables(episodes, turns, args.out)
    metrics = summarize(episodes)
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(episodes)} episodes, deal rate {metrics['overall']['deal_rate']:.3f}, "
          f"mean S {metrics['overall']['mean_S']:.3f} -> {args.out}")


if __name__ == "__main__":
    main()
