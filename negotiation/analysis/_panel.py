"""The report's exploratory buyer panel: each seller arm's S against the panel, its paired
difference from its size's base arm, and the split by panel buyer.

The panel's episodes (``panel/<arm>/episodes.parquet``, written by the ``panel`` stage) are outside
the frozen design: its intervals are the study's seed-cluster bootstrap without a multiplicity
correction, and every caption carries the panel's caveat. Error rows (an agent that raised, stalled
or timed out) are counted, never scored: a pair is compared only where both arms' episodes ran.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from negotiation.analysis._bootstrap import BootstrapSettings
from negotiation.analysis._contrast import bootstrap_series
from negotiation.analysis._pairing import combine_paired, metric_series
from negotiation.analysis._tables import Table, number, percent

__all__ = ["panel_bases", "panel_tables"]

METRIC = "S"
"""The panel reports the study's score."""


def panel_bases(arms: Mapping[str, Any]) -> dict[str, str]:
    """Arm -> the base arm of its size, for every arm that is not a base and has a sized base."""
    bases = {a.size: name for name, a in arms.items() if a.kind == "base"}
    return {name: bases[a.size] for name, a in arms.items() if a.kind != "base" and a.size in bases}


def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["outcome"] != "error"]


def _difference(frames: Mapping[str, pd.DataFrame], arm: str, base: str, settings: BootstrapSettings,
                rng: np.random.Generator) -> str:
    """``+0.012 [−0.020, +0.044]``: mean paired ΔS of ``arm`` minus ``base`` on the keys both ran."""
    series = {name: metric_series(_ok(frames[name]), METRIC, where=name) for name in (arm, base)}
    paired = combine_paired(series, {arm: 1.0, base: -1.0}, complete=False)
    if paired.empty:
        return "—"
    found = bootstrap_series(paired, settings, rng)
    return f"{found.mean:+.3f} [{found.ci[0]:+.3f}, {found.ci[1]:+.3f}]"


def panel_tables(frames: Mapping[str, pd.DataFrame], bases: Mapping[str, str], buyers: list[str],
                 description: str, caveat: str, settings: BootstrapSettings,
                 rng: np.random.Generator) -> tuple[Table, Table]:
    """The panel's two report tables.

    Args:
        frames: arm -> its panel episode table (``(episodes, columns)``, error rows included).
        bases: arm -> the base arm it is paired with (``panel_bases``); an arm without one shows '—'.
        buyers: the panel's buyer labels, in the order the panel file lists them.
        description, caveat: the panel file's texts, in the first caption.
        settings, rng: the study's bootstrap settings and the analysis' one Generator.
    """
    per_arm = Table("panel", f"Exploratory buyer panel (registry): {description} Paired ΔS against the arm's "
                             f"base on the same (domain, seed, buyer), seed-cluster bootstrap, no multiplicity "
                             f"correction. {caveat}",
                    ["Arm", "Episodes", "Error rows", "Deal %", "Mean S", "ΔS vs base [95% CI]"])
    by_buyer = Table("panel_buyers", f"Exploratory buyer panel: mean S of each arm against each panel buyer "
                                     f"(error rows left out). {caveat}", ["Arm", *buyers])
    for arm, frame in frames.items():
        ok = _ok(frame)
        base = bases.get(arm)
        per_arm.rows.append([arm, str(len(frame)), str(len(frame) - len(ok)), percent(ok["deal"].astype(bool).mean()
                             if len(ok) else None), number(ok[METRIC].mean() if len(ok) else None),
                             _difference(frames, arm, base, settings, rng) if base in frames else "—"])
        means = ok.groupby("buyer")[METRIC].mean()
        by_buyer.rows.append([arm, *(number(means.get(b)) for b in buyers)])
    return per_arm, by_buyer
