"""The full analysis of one study's evaluated arms: metrics, descriptors, frontier, contrasts, guards.

``run_analysis`` takes the episode (and turn) tables per arm plus the study's protocol
and arms, and returns every table the report draws; ``write_analysis`` stores them
under ``analyze/`` (``contrasts.json`` is the file the audit reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from negotiation.analysis._bootstrap import BootstrapSettings, cluster_bootstrap
from negotiation.study import ContrastResult, ContrastSpec, GuardRules, Interval, resolve_guards, resolve_read_step
from negotiation.analysis._contrast import not_estimable, run_family
from negotiation.analysis._descriptors import (
    descriptor_summary,
    env_seller_utility,
    episode_descriptors,
    style_summary,
    walk_aways,
)
from negotiation.analysis._efficiency import ScenarioSolution, deal_efficiency, solve_scenarios
from negotiation.analysis._guards import GuardResult, PostHocThresholds, run_guards, style_dagger
from negotiation.analysis._metrics import MetricContext, context_from_protocol, metrics_table
from negotiation.analysis._pairing import add_late_close
from negotiation.analysis._roles import size_roles, text_contrasts
from negotiation.analysis._strategy import strategy_summary
from negotiation.analysis._costs import frontier_costs

MC_Z = 1.96
"""Normal quantile of the Monte Carlo band reported beside each endpoint (a 95% band)."""
GAIN_METRICS = ("seller_u_dist", "seller_u_integ", "seller_u", "buyer_u", "welfare", "closes_late",
                "frontier_distance", "nash_distance", "welfare_share")
"""Deal-only metrics contrasted for every trained arm against its base (Table 2 / 9 and beyond)."""


def bootstrap_settings(protocol, *, seed: int, resamples: int | None = None) -> BootstrapSettings:
    """Bootstrap settings from ``protocol.statistics``; ``resamples`` overrides the count."""
    stats = protocol.statistics
    return BootstrapSettings(
        resamples=resamples or stats.resamples, level=stats.confidence, alpha=stats.alpha,
        rerun_resamples=max(stats.monte_carlo.rerun_resamples, resamples or 0), mc_z=MC_Z,
        mc_band=stats.monte_carlo.band, seed=seed,
    )


def _spec(name: str, weights: dict[str, float], metric: str = "S", **extra: Any) -> ContrastSpec:
    return ContrastSpec(name=name, weights=weights, metric=metric, **extra)


def default_contrasts(protocol, arms: Mapping[str, Any], present: Sequence[str], context: MetricContext
                      ) -> list[ContrastSpec]:
    """The primary family, then every exploratory contrast the report shows."""
    have = set(present)
    specs = [_spec(f"{c.arm} - {c.reference}", {c.arm: 1.0, c.reference: -1.0}, primary=True)
             for c in protocol.statistics.primary_family if {c.arm, c.reference} <= have]
    primary = {(c.arm, c.reference) for c in protocol.statistics.primary_family}
    bases = {arm.size: name for name, arm in arms.items() if arm.kind == "base" and name in have}
    trained = [name for name in present if name in arms and arms[name].kind == "trained"]
    references = [name for name in present if name in arms and arms[name].kind == "reference"]
    for name in trained:
        base = bases.get(arms[name].size)
        if base is None:
            continue
        pair = {name: 1.0, base: -1.0}
        if (name, base) not in primary:
            specs.append(_spec(f"{name} - {base}", pair))
        if context.held_out_domains:
            specs.append(_spec(f"{name} - {base} [held out]", pair, domains=context.held_out_domains))
        if context.buyer_split:
            specs.append(_spec(f"{name} - {base} [buyer split]", pair, buyer_split=context.buyer_split))
        specs += [_spec(f"{name} - {base} [{metric}]", pair, metric) for metric in GAIN_METRICS]
    for name in trained:
        for other in trained:
            a, b = arms[name], arms[other]
            if a.size == b.size and a.lr_multiple > b.lr_multiple:
                specs.append(_spec(f"{name} - {other}", {name: 1.0, other: -1.0}))
        specs += [_spec(f"{name} - {ref}", {name: 1.0, ref: -1.0}) for ref in references]
    # Two reads of one run (the paper's 4.5B 3x arm at 56 and 64; 31B's initial run at 40 and 56):
    # the later read minus the earlier one, the within-run stability figure of §5.
    for name in trained:
        for other in trained:
            a, b = arms[name], arms[other]
            if name != other and a.run == b.run and resolve_read_step(protocol, a) > resolve_read_step(protocol, b):
                specs.append(_spec(f"{name} - {other}", {name: 1.0, other: -1.0}))
    family = [(c.arm, c.reference) for c in protocol.statistics.primary_family if {c.arm, c.reference} <= have]
    for (a1, b1), (a2, b2) in zip(family, family[1:]):
        specs.append(_spec(f"({a2} - {b2}) - ({a1} - {b1})", {a2: 1.0, b2: -1.0, a1: -1.0, b1: 1.0}))
    # Last, so that they never change the draws of the contrasts above.
    known = {s.name for s in specs}
    return specs + [s for s in text_contrasts(protocol, arms, present, context) if s.name not in known]


@dataclass
class AnalysisResult:
    """Every table the report draws on."""

    metrics: pd.DataFrame
    """One row per (arm, panel): outcome metrics and buyer split."""
    arm_table: pd.DataFrame
    """One row per arm (indexed by arm): the 'all' panel plus style, descriptors, efficiency."""
    contrasts: list[ContrastResult]
    """Primary family first, then exploratory contrasts."""
    guards: list[GuardResult]
    """Every guard on every trained arm."""
    dagger: set[str]
    """Arms passing the prespecified guards but failing a post-hoc one."""
    solutions: dict[tuple[str, int], ScenarioSolution] = field(repr=False)
    """Frontier, Nash point and maximum welfare per scenario."""
    settings: BootstrapSettings | None = None
    """Bootstrap settings the contrasts used."""
    levels: dict[str, Interval] = field(default_factory=dict)
    """Arm-level seed-cluster intervals of S: keys ``<arm>`` and ``<arm> [held out]``."""
    costs: pd.DataFrame | None = None
    """Per (reference seller, buyer) cell: tokens and dollars (``frontier_costs``); Table 7's reference point."""
    strategy: pd.DataFrame | None = None
    """Per arm: the opening offer's value and closing turns that name the concession (``strategy_summary``;
    needs turn tables). Shown in the report, not written under ``analyze/``."""
    not_estimable: list[str] = field(default_factory=list)
    """Deal-only contrasts without an estimate: no scenario on which every arm closed a deal."""


EFFICIENCY_COLUMNS = ("frontier_distance", "nash_distance", "welfare_share")
"""Per-deal columns measured against the scenario's exact frontier (``deal_efficiency``)."""


def with_derived_columns(frames: Mapping[str, pd.DataFrame], context: MetricContext, alpha: float, *,
                         efficiency: bool = True
                         ) -> tuple[dict[str, pd.DataFrame], dict[tuple[str, int], ScenarioSolution]]:
    """Each arm's episode table with the columns derived metrics read, and the scenarios' solutions.

    Every table gets the late-close flag (``add_late_close``); with ``efficiency`` (it solves
    each scenario's frontier, the slow part) also ``EFFICIENCY_COLUMNS``. The analysis and
    ``nego contrast`` both read their derived columns from here.
    """
    if not efficiency:
        return {arm: add_late_close(frame, context.converge_turn) for arm, frame in frames.items()}, {}
    keys = {(d, int(s)) for frame in frames.values() for d, s in zip(frame["domain"], frame["seed"])}
    solutions = solve_scenarios(keys, alpha)
    stacked = pd.concat(list(frames.values()), ignore_index=True)
    measured = deal_efficiency(stacked, solutions).to_numpy()
    out, start = {}, 0
    for arm, frame in frames.items():
        frame = add_late_close(frame, context.converge_turn)
        for i, column in enumerate(EFFICIENCY_COLUMNS):
            frame[column] = measured[start : start + len(frame), i]
        out[arm], start = frame, start + len(frame)
    return out, solutions


def _arm_table(frames, metrics, turns, context, term_names, alpha: float) -> pd.DataFrame:
    table = metrics[metrics["panel"] == "all"].set_index("arm").drop(columns="panel")
    for arm, frame in frames.items():
        deals = frame[frame["deal"].astype(bool)]
        for column in EFFICIENCY_COLUMNS:
            table.loc[arm, column] = float(deals[column].mean()) if len(deals) else np.nan
    if turns:
        all_turns = pd.concat(list(turns.values()), ignore_index=True)
        all_episodes = pd.concat(list(frames.values()), ignore_index=True)
        style = style_summary(all_turns).set_index("arm")
        flags = walk_aways(all_turns, all_episodes, env_seller_utility(alpha))
        descriptors = descriptor_summary(episode_descriptors(all_turns, term_names), all_episodes, term_names,
                                         context.held_out_domains, flags).set_index("arm")
        table = table.join(style.drop(columns=["bad_parse_seller"]), how="left").join(descriptors, how="left")
        table["placeholders_per_episode"] = table["placeholder_count"] / table["episodes"]
    return table


def run_analysis(
    episodes: Mapping[str, pd.DataFrame],
    protocol,
    arms: Mapping[str, Any],
    settings: BootstrapSettings,
    *,
    turns: Mapping[str, pd.DataFrame] | None = None,
    signoffs: Mapping[str, Any] | None = None,
    limits: PostHocThresholds | None = None,
    contrasts: Sequence[ContrastSpec] | None = None,
    rules: GuardRules | None = None,
    prices: Any = None,
) -> AnalysisResult:
    """Metrics, descriptors, frontier columns, contrasts and guards for the given arms.

    Args:
      episodes: arm -> validated episode table.
      protocol: the study's ``negotiation.protocol.Protocol``.
      arms: arm name -> ``Arm`` (frozen matrix and registry-added arms).
      settings: bootstrap settings (``bootstrap_settings``).
      turns: arm -> turn table, for descriptors, style and walk-away guards.
      signoffs: arm -> registry ``SignOff``.
      limits: post-hoc thresholds, overriding ``rules.post_hoc``.
      prices: ``negotiation.study.TokenPrices`` for the frontier cost per episode (None: tokens only).
      rules: guard thresholds (``negotiation.study.resolve_guards``: the frozen protocol's plus the
        registry's ``guards.yaml``); None resolves the protocol's alone.
    """
    from negotiation.env import load_domain

    context = context_from_protocol(protocol)
    alpha = protocol.environment.dirichlet_alpha
    frames, solutions = with_derived_columns(episodes, context, alpha)
    metrics = metrics_table(frames, context)
    term_names = {d: load_domain(d).term_names for d in {d for f in frames.values() for d in f["domain"].unique()}}
    table = _arm_table(frames, metrics, turns, context, term_names, alpha)
    specs = list(contrasts) if contrasts is not None else default_contrasts(protocol, arms, list(frames), context)
    results = run_family(frames, specs, settings)
    unestimated = not_estimable(specs, results)
    rules = rules or resolve_guards(protocol, None)
    roles = size_roles(protocol, arms, list(frames))
    comparators = {n: roles[arms[n].size].shared_final for n in frames if n in arms and arms[n].kind == "trained"
                   and arms[n].lr_multiple > 1 and arms[n].size in roles and roles[arms[n].size].shared_final}
    guards = run_guards(table, arms, rules.prespecified, context.turn_cap, signoffs or {}, limits or rules.post_hoc,
                        comparators)
    levels = arm_levels(frames, context, settings)
    strategy = None
    if turns:
        strategy = strategy_summary(pd.concat(list(turns.values()), ignore_index=True),
                                    pd.concat(list(frames.values()), ignore_index=True), term_names,
                                    env_seller_utility(alpha))
    costs = frontier_costs(frames, arms, protocol, prices)
    return AnalysisResult(metrics, table, results, guards, style_dagger(guards), solutions, settings, levels,
                          costs, strategy, unestimated)


def arm_levels(frames: Mapping[str, pd.DataFrame], context: MetricContext, settings: BootstrapSettings
               ) -> dict[str, Interval]:
    """Seed-cluster intervals of each arm's own mean S, pooled and on the held-out domains.

    They draw from their own Generator, seeded ``[settings.seed, 1]``, so adding or
    removing them never changes the contrasts' draws.
    """
    rng = np.random.default_rng([settings.seed, 1])
    levels = {}
    for arm, frame in frames.items():
        levels[arm] = cluster_bootstrap(frame["S"].to_numpy(float), frame["seed"].to_numpy(), settings, rng)
        held = frame[frame["domain"].isin(context.held_out_domains)]
        if len(held):
            levels[f"{arm} [held out]"] = cluster_bootstrap(held["S"].to_numpy(float), held["seed"].to_numpy(),
                                                            settings, rng)
    return levels


def write_analysis(result: AnalysisResult, out_dir: Path, study: str) -> dict[str, Path]:
    """Write ``contrasts.json`` (the audit's file), metrics, per-arm table, guards and frontiers."""
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ("contrasts.json", "metrics.parquet", "arms.parquet", "guards.json",
                                           "frontiers.json")}
    contrasts = {"version": 1, "study": study,
                 "settings": result.settings.model_dump() if result.settings else None,
                 "contrasts": [c.model_dump(mode="json") for c in result.contrasts]}
    if result.not_estimable:  # written only when set, so a study whose contrasts all have estimates keeps its bytes
        contrasts["not_estimable"] = result.not_estimable
    paths["contrasts.json"].write_text(json.dumps(contrasts, indent=1) + "\n", encoding="utf-8")
    result.metrics.to_parquet(paths["metrics.parquet"], index=False)
    result.arm_table.reset_index(names="arm").to_parquet(paths["arms.parquet"], index=False)
    guards = {"version": 1, "study": study, "dagger": sorted(result.dagger),
              "guards": [g.model_dump(mode="json") for g in result.guards]}
    paths["guards.json"].write_text(json.dumps(guards, indent=1) + "\n", encoding="utf-8")
    frontiers = [solution.summary(domain, seed).model_dump(mode="json")
                 for (domain, seed), solution in sorted(result.solutions.items())]
    paths["frontiers.json"].write_text(json.dumps({"version": 1, "study": study, "scenarios": frontiers}) + "\n",
                                       encoding="utf-8")
    return paths
