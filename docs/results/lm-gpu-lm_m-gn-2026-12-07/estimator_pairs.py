"""The two estimators step by step: each group-normalized lm_m run of this folder beside the
paper's-estimator (leave-one-out) run of the same rate in docs/results/lm-gpu-2026-12-07/.

Both runs of a pair draw their training scenarios and sample seeds from the size's init_seed, so a
step sees the same scenarios in both; the bases differ, though (the GPU warm start is not bitwise
reproducible: its final validation loss was 0.150 there and 0.160 here), so the per-step difference
is the estimator's and the base's together.

    python docs/results/lm-gpu-lm_m-gn-2026-12-07/estimator_pairs.py > docs/results/lm-gpu-lm_m-gn-2026-12-07/estimator_pairs.txt

Prints per window of combined steps each run's mean per step and the paired mean difference
(group_mean run minus leave-one-out run) with its standard error over the window's steps; then the
training reward's linear trend over the whole chain (initial run and continuation) for each
estimator and for their difference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
LOO = HERE.parent / "lm-gpu-2026-12-07" / "tables" / "curves"
GN = HERE / "tables" / "curves"
PAIRS = {"lm_m_gn": "lm_m_shared", "lm_m_gn_cont": "lm_m_shared_cont", "lm_m_gn_lr3x": "lm_m_lr3x"}
CHAINS = ((("lm_m_gn", "lm_m_gn_cont"), ("lm_m_shared", "lm_m_shared_cont")), (("lm_m_gn_lr3x",), ("lm_m_lr3x",)))
"""Runs read as one curve over combined steps (an initial run and its continuation)."""
METRICS = ("train/reward", "train/bad_parse_rate", "train/deal_rate", "train/kl_penalty", "train/entropy",
           "train/adv_max")
WINDOWS = ((1, 16), (17, 32), (33, 48), (49, 64), (65, 84), (85, 104), (17, 64))


def window_lines(gn: pd.DataFrame, loo: pd.DataFrame) -> list[str]:
    """Per (window, metric) one cell: the gn mean, the LOO mean and the mean paired difference (se)."""
    both = gn.merge(loo, on="combined_step", suffixes=("_gn", "_loo"))
    lines = []
    for lo, hi in WINDOWS:
        part = both[(both.combined_step >= lo) & (both.combined_step <= hi)]
        if part.empty:
            continue
        lines.append(f"  steps {lo:>3}-{hi:<3} (n {len(part):>2})")
        for m in METRICS:
            a, b = part[f"{m}_gn"].to_numpy(float), part[f"{m}_loo"].to_numpy(float)
            d = a - b
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
            lines.append(f"    {m.split('/')[1]:<16} gn {a.mean():8.4f}  loo {b.mean():8.4f}  "
                         f"gn - loo {d.mean():+8.4f} (se {se:.4f})")
    return lines


def slope(steps: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of ``values`` [n] on ``steps`` [n], per 100 steps, with its standard error."""
    b, a = np.polyfit(steps, values, 1)
    resid = values - (a + b * steps)
    se = np.sqrt(resid @ resid / (len(steps) - 2) / ((steps - steps.mean()) @ (steps - steps.mean())))
    return 100 * b, 100 * se


def trend_lines(gn_runs: tuple[str, ...], loo_runs: tuple[str, ...]) -> list[str]:
    """Training reward's linear trend over combined steps: each chain's, and that of their difference."""
    gn = pd.concat([pd.read_csv(GN / f"{r}.csv") for r in gn_runs])
    loo = pd.concat([pd.read_csv(LOO / f"{r}.csv") for r in loo_runs])
    both = gn.merge(loo, on="combined_step", suffixes=("_gn", "_loo"))
    x = both.combined_step.to_numpy(float)
    cells = {"gn": both["train/reward_gn"], "loo": both["train/reward_loo"],
             "gn - loo": both["train/reward_gn"] - both["train/reward_loo"]}
    return [f"  reward trend per 100 steps, {name:<8} {b:+.4f} (se {se:.4f}, n {len(x)})"
            for name, (b, se) in ((n, slope(x, v.to_numpy(float))) for n, v in cells.items())]


def main() -> None:
    for gn_run, loo_run in PAIRS.items():
        gn, loo = pd.read_csv(GN / f"{gn_run}.csv"), pd.read_csv(LOO / f"{loo_run}.csv")
        print(f"{gn_run} - {loo_run} (per-step means; paired difference, standard error over steps):")
        print("\n".join(window_lines(gn, loo)))
    for gn_runs, loo_runs in CHAINS:
        print(f"{' + '.join(gn_runs)} against {' + '.join(loo_runs)}, steps 1 to the end:")
        print("\n".join(trend_lines(gn_runs, loo_runs)))


if __name__ == "__main__":
    main()
