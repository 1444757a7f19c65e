"""Analysis of evaluation episode tables: statistics, metrics, frontier, validation, guards, report.

Stages (each a function over a results directory, and a ``nego`` command):
``validate_results`` (great-expectations) → ``analyze_results`` (metrics, contrasts with
Holm, exact Pareto/Nash columns, guards) → ``report_results`` (HTML + Markdown + PNG and the
transcript viewer they link, composed once by ``write_report``);
``viewer_results`` and ``packet_results`` for reading transcripts. What the registry holds
(sign-offs, deviations' served values, the deviation log and compliance tables) comes in as a
``RegistryInputs`` argument: this package does not import ``negotiation.registry``. See
docs/analysis.md.
"""

from negotiation.analysis._analysis import (
    EFFICIENCY_COLUMNS,
    AnalysisResult,
    bootstrap_settings,
    default_contrasts,
    run_analysis,
    with_derived_columns,
    write_analysis,
)
from negotiation.analysis._bargaining import ScenarioFrontier, max_welfare, nash_point, signed_distance
from negotiation.analysis._bootstrap import (
    BootstrapSettings,
    bootstrap_p_value,
    cluster_bootstrap,
    cluster_totals,
    percentile_interval,
    resample_cluster_means,
)
from negotiation.analysis._contrast import contrast, contrast_values, not_estimable, run_family
from negotiation.analysis._descriptors import (
    descriptor_summary,
    env_seller_utility,
    episode_descriptors,
    style_summary,
    walk_aways,
)
from negotiation.analysis._efficiency import deal_efficiency, problem_from_scenario, solve_scenario, solve_scenarios
from negotiation.analysis._errors import (
    AnalysisError,
    FrontierError,
    MetricError,
    PairingError,
    SettingsError,
    ValidationFailed,
)
from negotiation.analysis._frontier import Allocation, Frontier, Problem, pareto_frontier
from negotiation.analysis._guards import GuardResult, PostHocThresholds, run_guards, style_dagger
from negotiation.analysis._metrics import (
    EPISODE_COLUMNS,
    MetricContext,
    context_from_protocol,
    metrics_table,
    outcome_summary,
    require_columns,
    score_identity_gap,
)
from negotiation.analysis._multiple import holm, interval_mark
from negotiation.analysis._metric_record import Metric, register_metric, table_metrics
from negotiation.analysis._paired import PairedTables
from negotiation.analysis._power import (allowance_for_chance, cluster_spread, false_trip_chance, guard_trip_table,
                                         minimum_detectable_effect, power_table, ratio_spread)
from negotiation.analysis._packet import hand_read_packet
from negotiation.analysis._panel import panel_bases, panel_tables
from negotiation.analysis._pairing import (
    METRICS,
    PAIR_KEY,
    add_late_close,
    buyer_split_series,
    combine_paired,
    metric_series,
    paired_values,
)
from negotiation.analysis._results import (
    analyze_results,
    load_tables,
    packet_results,
    report_results,
    require_validated,
    scoped,
    validate_results,
    viewer_results,
    write_report,
)
from negotiation.analysis._tables import RegistryInputs, Table
from negotiation.analysis._synthetic import synthetic_tables, write_synthetic_results
from negotiation.analysis._validate import (
    ValidationReport,
    ValidationSettings,
    require_valid,
    validate_episodes,
    validation_settings,
)
from negotiation.analysis._viewer import viewer_html, write_viewer

__all__ = [
    "EFFICIENCY_COLUMNS", "EPISODE_COLUMNS", "METRICS", "PAIR_KEY", "Allocation", "AnalysisError", "AnalysisResult", "BootstrapSettings",
    "Frontier", "FrontierError", "GuardResult", "Metric", "MetricContext",
    "MetricError", "PairedTables", "PairingError", "PostHocThresholds", "Problem", "RegistryInputs", "ScenarioFrontier",
    "SettingsError", "Table", "ValidationFailed", "ValidationReport", "ValidationSettings",
    "add_late_close", "analyze_results", "bootstrap_p_value",
    "buyer_split_series", "cluster_bootstrap", "cluster_spread", "cluster_totals", "combine_paired", "context_from_protocol",
    "contrast", "contrast_values", "deal_efficiency", "default_contrasts",
    "descriptor_summary", "env_seller_utility", "episode_descriptors", "hand_read_packet",
    "holm", "interval_mark", "load_tables", "max_welfare", "metric_series", "metrics_table", "minimum_detectable_effect",
    "nash_point", "not_estimable", "outcome_summary", "packet_results", "paired_values", "panel_bases", "panel_tables", "pareto_frontier",
    "percentile_interval", "power_table", "ratio_spread", "false_trip_chance", "allowance_for_chance", "guard_trip_table", "problem_from_scenario", "register_metric", "report_results",
    "require_columns", "require_valid", "require_validated", "resample_cluster_means", "run_analysis", "run_family", "run_guards", "score_identity_gap",
    "bootstrap_settings", "scoped", "signed_distance", "solve_scenario", "solve_scenarios",
    "style_dagger", "style_summary", "synthetic_tables", "table_metrics", "validate_episodes", "write_synthetic_results",
    "validate_results", "validation_settings", "viewer_html", "viewer_results", "walk_aways", "with_derived_columns",
    "write_analysis", "write_report", "write_viewer",
]
