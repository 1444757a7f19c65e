"""Holm's step-down correction over the primary family, and the paper's interval marks."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from negotiation.analysis._errors import SettingsError

MARK_PRIMARY = "*"
"""Primary-family contrast that survives Holm at the protocol's alpha."""
MARK_EXPLORATORY = "e"
"""Exploratory (unadjusted) contrast whose interval excludes zero."""
MARK_STYLE_GUARD = "†"
"""Arm that passes the prespecified guards but fails a post-hoc style diagnostic."""


def holm(pvalues: Sequence[float], alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure.

    Sort the m p-values ascending; reject while ``p_(i) ≤ alpha/(m − i + 1)`` and
    stop at the first that fails. Adjusted p-values are
    ``max_{j ≤ i} min(1, (m − j + 1)·p_(j))``, so ``adjusted ≤ alpha`` iff rejected.

    Args:
      pvalues: ``(m,)`` p-values in [0, 1], in the family's own order.
      alpha: family-wise error rate.

    Returns:
      ``(rejected, adjusted)``, both ``(m,)`` in the input order.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise SettingsError("holm", "pvalues", f"expected a flat sequence, got shape {p.shape}")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise SettingsError("holm", "pvalues", f"p-values outside [0, 1]: {p.tolist()!r}")
    if not 0.0 < alpha < 1.0:
        raise SettingsError("holm", "alpha", f"{alpha!r} is not in (0, 1)")
    m = len(p)
    order = np.argsort(p, kind="stable")
    multipliers = m - np.arange(m)
    stepped = np.maximum.accumulate(np.minimum(1.0, multipliers * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    passes = p[order] <= alpha / multipliers
    # Step-down: everything after the first failure is retained, whatever its p.
    first_fail = int(np.argmin(passes)) if not passes.all() else m
    rejected = np.zeros(m, dtype=bool)
    rejected[order[:first_fail]] = True
    return rejected, adjusted


def interval_mark(*, excludes_zero: bool, primary: bool, holm_rejected: bool = False) -> str:
    """The paper's mark for one contrast.

    Primary contrasts get ``*`` when Holm rejects; every other contrast is exploratory
    and gets ``e`` when its unadjusted interval excludes zero.
    """
    if primary:
        return MARK_PRIMARY if holm_rejected else ""
    return MARK_EXPLORATORY if excludes_zero else ""
