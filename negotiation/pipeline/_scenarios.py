"""``scenarios`` stage: the frozen scenario set every arm meets, written down once.

One row per evaluation cell ``(domain, seed, buyer)`` with both parties' draws, so a reader can
see (and the evaluate stage can check) that every arm faced the identical set. The hash of the
table is recorded in ``scenarios.json`` beside it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from negotiation.env import load_domain, make_scenario
from negotiation.study import Study, as_study

EVALUATION_FILE = "evaluation.parquet"
PILOT_FILE = "pilot.parquet"
SUMMARY_FILE = "scenarios.json"


def _rows(study: Any, seeds: range, buyers: list[str]) -> list[dict[str, Any]]:
    protocol = study.protocol
    alpha = protocol.environment.dirichlet_alpha
    held_out = set(protocol.domains.held_out)
    rows = []
    for domain_name in sorted(protocol.domains.evaluated):
        domain = load_domain(domain_name, study.root / "protocol" / "domains")
        for seed in seeds:
            sc = make_scenario(domain, seed, alpha)
            draws = {"seller_weights": dict(sc.seller.weights), "buyer_weights": dict(sc.buyer.weights),
                     "seller_preferred": dict(sc.seller.preferred), "buyer_preferred": dict(sc.buyer.preferred)}
            for buyer in buyers:
                rows.append({"domain": domain_name, "seed": seed, "buyer": buyer,
                             "held_out": domain_name in held_out,
                             **{k: json.dumps(v, sort_keys=True, default=str) for k, v in draws.items()}})
    return rows


def scenario_table(study: Study | str, block: str = "evaluation") -> pd.DataFrame:
    """Cells of the evaluation (or pilot) block: ``seeds_per_domain`` seeds (pilot: its own count)."""
    study = as_study(study)
    p = study.protocol
    seeds_block = getattr(p.seeds, block)
    n = p.evaluation.seeds_per_domain if block == "evaluation" else p.pilot_gate.seeds_per_domain
    seeds = range(seeds_block.start, seeds_block.start + n)
    return pd.DataFrame(_rows(study, seeds, sorted(p.buyers.evaluation)))


def run_scenarios(study: Study | str, out_dir: Path) -> dict[str, Any]:
    """Write the evaluation and pilot scenario tables and their summary."""
    study = as_study(study)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # No protocol hash here: every evaluate stage depends on this folder, and an edit to a
    # protocol section the scenarios do not read must not rerun them (the tables' hashes say
    # what the scenarios are).
    summary: dict[str, Any] = {"study": study.name}
    for block, name in (("evaluation", EVALUATION_FILE), ("pilot", PILOT_FILE)):
        table = scenario_table(study, block)
        table.to_parquet(out / name, index=False)
        digest = hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()
        summary[block] = {"cells": len(table), "domains": int(table["domain"].nunique()),
                          "seeds": int(table["seed"].nunique()), "buyers": sorted(table["buyer"].unique()),
                          "sha256": digest}
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
