"""Exploratory gain by size at the step-56 read, from the kept tables of both GPU sizes.

The pre-registered gain-by-size contrast compares the primary pairs (the step-104 arms), and
lm_l_shared_104 was not evaluated (README). This is the same difference of paired gains at the
read both sizes have: (lm_l_shared - lm_l_base) - (lm_m_shared - lm_m_base), with the
protocol's seed-cluster bootstrap (one Generator, seed 0, as `nego analyze`), plus the base gap.

    python docs/results/lm-gpu-lm_l-2026-12-07/gain_by_size_step56.py
"""

from pathlib import Path

import numpy as np
import pandas as pd

from negotiation.analysis import bootstrap_settings, contrast
from negotiation.study import ContrastSpec, load_study

HERE = Path(__file__).parent
TABLES = {"lm_l": HERE / "tables", "lm_m": HERE.parent / "lm-gpu-2026-12-07" / "tables"}
CONTRASTS = {
    "(lm_l_shared - lm_l_base) - (lm_m_shared - lm_m_base)":
        {"lm_l_shared": 1.0, "lm_l_base": -1.0, "lm_m_shared": -1.0, "lm_m_base": 1.0},
    "lm_l_base - lm_m_base": {"lm_l_base": 1.0, "lm_m_base": -1.0},
    "lm_l_shared - lm_m_shared": {"lm_l_shared": 1.0, "lm_m_shared": -1.0},
}


def main() -> None:
    protocol = load_study("lm").protocol
    settings = bootstrap_settings(protocol, seed=0)
    rng = np.random.default_rng(settings.seed)
    arms = {arm for weights in CONTRASTS.values() for arm in weights}
    frames = {arm: pd.read_parquet(TABLES[arm[:4]] / "evaluate" / arm / "episodes.parquet") for arm in sorted(arms)}
    for name, weights in CONTRASTS.items():
        iv = contrast(frames, ContrastSpec(name=name, weights=weights, metric="S"), settings, rng)
        print(f"{name}: {iv.mean:+.4f} [{iv.ci[0]:+.4f}, {iv.ci[1]:+.4f}] p {iv.p:.3g} "
              f"({iv.clusters} seed clusters, {iv.episodes} paired episodes)")


if __name__ == "__main__":
    main()
