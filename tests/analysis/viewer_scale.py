"""Episode and turn tables at paper scale for the viewer: the demo's synthetic tables tiled over
more seeds (same columns, same kinds of text), ``n`` episodes in all."""

from __future__ import annotations

import pandas as pd

from negotiation.study import load_study
from negotiation.analysis._synthetic import synthetic_tables
from negotiation.study import default_root


def scaled_tables(n: int, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    context = load_study("demo", default_root())
    episodes, turns = synthetic_tables(context.protocol, list(context.arms), seed=seed)
    base_e, base_t = pd.concat(episodes.values(), ignore_index=True), pd.concat(turns.values(), ignore_index=True)
    copies = -(-n // len(base_e))
    shift = int(base_e["seed"].max() - base_e["seed"].min() + 1)
    all_e = pd.concat([base_e.assign(seed=base_e["seed"] + i * shift) for i in range(copies)], ignore_index=True)
    all_t = pd.concat([base_t.assign(seed=base_t["seed"] + i * shift) for i in range(copies)], ignore_index=True)
    key = ["arm", "domain", "seed", "buyer"]
    all_e = all_e.sort_values(["seed", "domain", "buyer", "arm"]).head(n)
    return all_e.reset_index(drop=True), all_t.merge(all_e[key], on=key)
