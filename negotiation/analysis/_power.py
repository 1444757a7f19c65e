"""How small a paired gain a design detects: the minimum detectable effect of a seed-cluster contrast.

The study's contrasts resample seeds as clusters (``_bootstrap``): each seed, with all its domains
and buyers, is one unit, so a contrast's standard error is the spread of its per-seed means over
``sqrt(K)``. From a pilot's per-seed means (measured with any number of seeds ≥ 2) this gives, for
a design of ``K`` seeds, the smallest true gain that a two-sided test at level ``alpha / m`` (Holm's
first step over ``m`` primary contrasts, the strictest one) detects with probability ``power``::

    MDE(K) = (z[1 - alpha / (2 m)] + z[power]) * sd_cluster / sqrt(K)

A normal approximation, as the paper's p-value is (``bootstrap_p_value``). With one arm's table
alone the paired difference's per-seed spread is not measured; ``sqrt(2)`` times the arm's own is
used, the spread of a difference of two independent arms (pairing on the same scenarios can only
shrink it when the arms' scores correlate positively, so the figure is conservative then).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Sequence

import numpy as np

from negotiation.analysis._bootstrap import cluster_totals
from negotiation.analysis._errors import AnalysisError

__all__ = ["cluster_spread", "minimum_detectable_effect", "power_table"]


def cluster_spread(values: np.ndarray, clusters: np.ndarray, *, paired: bool) -> tuple[float, int]:
    """Standard deviation (``ddof=1``) of the per-cluster means of ``values``, and the cluster count.

    Args:
      values: ``(num_episodes,)`` paired differences (``paired``) or one arm's metric values.
      clusters: ``(num_episodes,)`` cluster ids (seeds).
      paired: False scales one arm's spread by ``sqrt(2)``: the spread of a difference of two
        independent arms with that spread.
    """
    sums, counts = cluster_totals(values, clusters)
    if sums.size < 2:
        raise AnalysisError("power", "clusters", f"{sums.size} seed cluster(s); a spread needs at least 2")
    spread = float(np.std(sums / counts, ddof=1))
    return (spread if paired else spread * np.sqrt(2.0)), int(sums.size)


def minimum_detectable_effect(spread: float, n_clusters: int, *, alpha: float, power: float, tests: int = 1) -> float:
    """Smallest true paired gain detected with probability ``power`` by a two-sided test at
    ``alpha / tests`` with ``n_clusters`` seed clusters of per-cluster spread ``spread``."""
    if n_clusters < 2 or tests < 1 or not 0 < alpha < 1 or not 0 < power < 1 or spread < 0:
        raise AnalysisError("power", "design", f"clusters {n_clusters}, tests {tests}, alpha {alpha}, power {power}, "
                            f"spread {spread}: need clusters >= 2, tests >= 1, 0 < alpha, power < 1, spread >= 0")
    z = NormalDist().inv_cdf
    return float((z(1.0 - alpha / (2.0 * tests)) + z(power)) * spread / np.sqrt(n_clusters))


def power_table(spread: float, designs: Sequence[int], *, alpha: float, power: float,
                tests: int) -> list[tuple[int, float]]:
    """``(clusters, minimum detectable effect)`` for each number of seed clusters in ``designs``."""
    return [(int(k), minimum_detectable_effect(spread, k, alpha=alpha, power=power, tests=tests)) for k in designs]
