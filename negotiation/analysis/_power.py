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

The same spreads say how often a guard trips by chance: a trained arm that behaves exactly as its
base (same per-turn bad-parse rate, same turns) still differs from it by sampling noise, and a
guard whose allowance is small against that noise fails correct arms (``false_trip_chance``). A
pooled rate (bad turns over turns) has the per-cluster spread of its linearized residuals
(``ratio_spread``), so pooling over more turns and more seeds shrinks it the same way.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, Sequence

import numpy as np

from negotiation.analysis._bootstrap import cluster_totals
from negotiation.analysis._errors import AnalysisError

__all__ = ["allowance_for_chance", "cluster_spread", "false_trip_chance", "guard_trip_table",
           "minimum_detectable_effect", "power_table", "ratio_spread"]


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


def ratio_spread(numerators: np.ndarray, denominators: np.ndarray, clusters: np.ndarray) -> tuple[float, int]:
    """Per-cluster spread of the pooled ratio ``sum(numerators) / sum(denominators)`` (e.g. bad turns
    over turns), scaled so that ``spread / sqrt(K)`` is the ratio's standard error at ``K`` clusters
    (the delta method: residuals ``n_k - R d_k`` over the mean cluster denominator), and the cluster count.

    Args:
      numerators, denominators: ``(num_episodes,)`` counts per episode.
      clusters: ``(num_episodes,)`` cluster ids (seeds).
    """
    num, _ = cluster_totals(numerators, clusters)
    den, _ = cluster_totals(denominators, clusters)
    if num.size < 2 or den.sum() <= 0:
        raise AnalysisError("power", "clusters", f"{num.size} seed cluster(s) with {den.sum():g} turns; "
                            "a rate's spread needs at least 2 clusters and a turn")
    residuals = num - (num.sum() / den.sum()) * den
    return float(np.std(residuals, ddof=1) / den.mean()), int(num.size)


def _difference_sd(spread: float, n_clusters: int) -> float:
    """Standard deviation of ``arm - base`` for two independent arms of ``n_clusters`` seed clusters
    with per-cluster ``spread``: the scale both guard functions below measure an allowance in."""
    return float(np.sqrt(2.0) * spread / np.sqrt(n_clusters))


def false_trip_chance(spread: float, n_clusters: int, allowance: float) -> float:
    """Chance that an arm equal in law to its base reads ``arm - base > allowance`` (a one-sided
    guard fails) with ``n_clusters`` seed clusters, both arms independent with per-cluster
    ``spread`` (normal approximation): ``1 - Phi(allowance sqrt(K) / (sqrt(2) spread))``."""
    if n_clusters < 1 or spread < 0 or allowance < 0:
        raise AnalysisError("power", "guard", f"clusters {n_clusters}, spread {spread}, allowance {allowance}: "
                            "need clusters >= 1, spread >= 0, allowance >= 0")
    if spread == 0:
        return 0.0
    with np.errstate(over="ignore", divide="ignore"):  # a spread near 0: z is infinite, the chance 0
        z = np.float64(allowance) / np.float64(_difference_sd(spread, n_clusters))
    return float(1.0 - NormalDist().cdf(float(z)))


def allowance_for_chance(spread: float, n_clusters: int, chance: float) -> float:
    """The smallest allowance whose ``false_trip_chance`` is ``chance``: the guard a re-freeze can
    set so that an arm equal in law to its base fails it that often and no more,
    ``z[1 - chance] sqrt(2) spread / sqrt(K)`` (0 for a chance of one half or more)."""
    if n_clusters < 1 or spread < 0 or not 0 < chance < 1:
        raise AnalysisError("power", "guard", f"clusters {n_clusters}, spread {spread}, chance {chance}: "
                            "need clusters >= 1, spread >= 0, 0 < chance < 1")
    return max(0.0, NormalDist().inv_cdf(1.0 - chance) * _difference_sd(spread, n_clusters))


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


def guard_trip_table(episodes: Any, guards: Any, designs: Sequence[int], *,
                     chance: float = 0.05) -> list[dict[str, Any]]:
    """For each difference guard of ``guards`` (``protocol.guards``) and each design of ``K`` seed
    clusters, the chance that an arm equal in law to the pilot arm ``episodes`` (an episode table)
    trips it against its base by sampling noise alone: the seller bad-parse rate rising by more
    than its allowance, mean turns rising by more than theirs, the deal rate falling by more than
    its drop (an upper bound: that guard also needs deal-only U~ to rise).

    Returns one ``{"guard", "allowance", "spread", "chances": [(K, chance), ...], "allowances":
    [(K, allowance), ...]}`` per guard; ``allowances`` are those tripped with probability ``chance``."""
    seeds = episodes["seed"].to_numpy()
    parse, _ = ratio_spread(episodes["n_bad_seller"].to_numpy(float), episodes["n_seller_turns"].to_numpy(float), seeds)
    turns, _ = cluster_spread(episodes["n_turns"].to_numpy(float), seeds, paired=True)
    deal, _ = cluster_spread(episodes["deal"].astype(float).to_numpy(), seeds, paired=True)
    rows = [("parse_rate", guards.parse_rate.max_increase, parse),
            ("turns", guards.turns.max_increase_over_base, turns),
            ("deal_rate", guards.deal_rate.max_drop, deal)]
    return [{"guard": name, "allowance": allowance, "spread": spread,
             "chances": [(int(k), false_trip_chance(spread, int(k), allowance)) for k in designs],
             "allowances": [(int(k), allowance_for_chance(spread, int(k), chance)) for k in designs]}
            for name, allowance, spread in rows if allowance is not None]
