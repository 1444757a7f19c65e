"""Analysis benchmarks, printed side by side with a reference.

1. One seed-cluster contrast at 10^5 resamples (64 seeds x 18 episodes) against
   ``scipy.stats.bootstrap`` (percentile, vectorized) on the 64 per-cluster mean
   differences at the same count: times and their ratio.
2. The full analysis of a synthetic 21-arm x 1,152-episode grid on the paper's
   protocol (frozen and registry-added arms): validation (great-expectations) and
   ``run_analysis`` (metrics, descriptors, exact frontiers, ~300 contrasts, guards).

Usage: ``python benchmarks/analysis.py [--repeats 15] [--small]``. Times are wall-clock;
the first call of each function (numba compile or cache load, imports) is excluded and
reported separately. ``--small`` (CI) runs each part once at a reduced size: 10^3
resamples and the grid's two smallest sizes, base and trained (their contrasts and guards).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats

from negotiation.analysis import BootstrapSettings, cluster_bootstrap


def _times(function, repeats: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return min(samples), statistics.median(samples)


def contrast_benchmark(repeats: int, resamples: int = 100_000) -> None:
    rng = np.random.default_rng(20261130)
    effects = np.repeat(rng.normal(0.03, 0.05, size=64), 18)
    values, clusters = effects + rng.normal(0.0, 0.2, size=1152), np.repeat(np.arange(64), 18)
    settings = BootstrapSettings(resamples=resamples, level=0.95, alpha=0.05, rerun_resamples=resamples,
                                 mc_z=1.96, mc_band=0.001, seed=0)
    generator = np.random.default_rng(1)
    start = time.perf_counter()
    ours = cluster_bootstrap(values, clusters, settings, generator)
    first = time.perf_counter() - start
    ours_min, ours_median = _times(lambda: cluster_bootstrap(values, clusters, settings, generator), repeats)
    cluster_means = values.reshape(64, 18).mean(axis=1)
    scipy_call = lambda: stats.bootstrap((cluster_means,), np.mean, n_resamples=resamples,  # noqa: E731
                                         method="percentile", vectorized=True, rng=generator)
    ref = scipy_call()
    ref_min, ref_median = _times(scipy_call, max(3, repeats // 3))
    print(f"one contrast, 64 seed clusters x 18 episodes, {resamples} resamples")
    print(f"  ours  min {ours_min * 1e3:7.2f} ms  median {ours_median * 1e3:7.2f} ms  (first call {first:.2f} s)"
          f"  ci [{ours.ci[0]:+.4f}, {ours.ci[1]:+.4f}]  MC band ±{max(ours.mc_error):.4f}")
    print(f"  scipy min {ref_min * 1e3:7.2f} ms  median {ref_median * 1e3:7.2f} ms"
          f"                       ci [{ref.confidence_interval.low:+.4f}, {ref.confidence_interval.high:+.4f}]")
    print(f"  ratio scipy/ours: {ref_min / ours_min:.1f}x (min)  {ref_median / ours_median:.1f}x (median)")


SMALL_ARMS = ("e2b_base", "e4b_base", "e2b_shared_104", "e4b_shared_104")


def grid_benchmark(seed: int, only: tuple[str, ...] | None = None) -> None:
    from negotiation.analysis._analysis import run_analysis, bootstrap_settings
    from negotiation.analysis._synthetic import synthetic_tables
    from negotiation.analysis._validate import validate_episodes, validation_settings
    from negotiation.study import load_study, study_guard_rules

    study = load_study("paper")
    arms = study.arms  # frozen and added arms, merged once by the study
    if only is not None:
        arms = {name: arms[name] for name in only}
    start = time.perf_counter()
    episodes, turns = synthetic_tables(study.protocol, list(arms), seed)
    made = time.perf_counter() - start
    rows = sum(len(frame) for frame in episodes.values())
    print(f"synthetic grid: {len(arms)} arms x {len(next(iter(episodes.values())))} episodes = {rows} episodes, "
          f"{sum(len(t) for t in turns.values())} turns (built in {made:.1f} s, not counted)")
    start = time.perf_counter()
    import great_expectations  # noqa: F401  (its import alone takes seconds; reported apart)
    imported = time.perf_counter() - start
    start = time.perf_counter()
    report = validate_episodes(episodes, validation_settings(study.protocol, list(arms)))
    validated = time.perf_counter() - start
    start = time.perf_counter()
    # the guard thresholds the registry declares, as the analyze stage passes them
    result = run_analysis(episodes, study.protocol, arms, bootstrap_settings(study.protocol, seed=0), turns=turns,
                          rules=study_guard_rules(study))
    analysed = time.perf_counter() - start
    print(f"  validation (great-expectations): {validated:5.1f} s  success={report.success}"
          f"  (+ {imported:.1f} s to import great_expectations)")
    print(f"  run_analysis: {analysed:5.1f} s  ({len(result.contrasts)} contrasts at "
          f"{result.settings.resamples} resamples, {sum(c.interval.rerun for c in result.contrasts)} re-run at "
          f"{result.settings.rerun_resamples}; {len(result.solutions)} exact frontiers; {len(result.guards)} guards)")
    print(f"  total analysis (validation + run_analysis): {validated + analysed:5.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true", help="CI mode: 10^3 resamples, one repeat, the SMALL_ARMS grid")
    args = parser.parse_args()
    if args.small:
        contrast_benchmark(1, resamples=1_000)
        grid_benchmark(args.seed, only=SMALL_ARMS)
    else:
        contrast_benchmark(args.repeats)
        grid_benchmark(args.seed)


if __name__ == "__main__":
    main()
