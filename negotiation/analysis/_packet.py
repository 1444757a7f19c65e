"""The hand-read guard's packet: a seeded sample of transcripts per trained arm.

The packet draws, for every trained arm and domain family (training, held out), the
protocol's number of episodes uniformly without replacement, from one explicit
Generator over the keys sorted first, so the same seed gives the same packet.
Readers record their verdicts with ``nego signoff`` (``negotiation.registry.record_signoff``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

FAMILIES = ("training", "held_out")
"""Domain families a packet samples (the sign-off record's vocabulary)."""
PACKET_KEY = ["arm", "domain", "seed", "buyer"]


def hand_read_packet(
    episodes: Mapping[str, pd.DataFrame],
    arms: Mapping[str, Any],
    held_out_domains: tuple[str, ...],
    per_family: int,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Rows ``arm, family, domain, seed, buyer`` to read: ``per_family`` per trained arm per family.

    Args:
      episodes: arm -> episode table.
      arms: arm name -> protocol ``Arm`` (only ``kind == "trained"`` arms are read).
      held_out_domains: the study's held-out domains (the rest are the training family).
      per_family: ``protocol.guards.hand_read.transcripts_per_domain_family``.
      rng: the packet's Generator.
    """
    picked = []
    for arm in sorted(episodes):
        if arm not in arms or arms[arm].kind != "trained":
            continue
        table = episodes[arm].sort_values(PACKET_KEY[1:]).reset_index(drop=True)
        family = np.where(table["domain"].isin(held_out_domains), "held_out", "training")
        for name in FAMILIES:
            candidates = np.flatnonzero(family == name)
            count = min(per_family, len(candidates))
            chosen = np.sort(rng.choice(candidates, size=count, replace=False)) if count else candidates[:0]
            rows = table.loc[chosen, PACKET_KEY[1:]].assign(arm=arm, family=name)
            picked.append(rows[["arm", "family", *PACKET_KEY[1:]]])
    columns = ["arm", "family", *PACKET_KEY[1:]]
    return pd.concat(picked, ignore_index=True) if picked else pd.DataFrame(columns=columns)
