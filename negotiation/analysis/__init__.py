"""Analysis of evaluation episode tables: statistics, metrics, frontier, validation, report."""

from negotiation.analysis._bootstrap import (
    BootstrapSettings,
    Interval,
    bootstrap_p_value,
    cluster_bootstrap,
    cluster_totals,
    percentile_interval,
    resample_cluster_means,
)
from negotiation.analysis._contrast import ContrastResult, ContrastSpec, contrast, contrast_values, run_family
from negotiation.analysis._errors import (
    AnalysisError,
    FrontierError,
    MetricError,
    PairingError,
    SettingsError,
    SignoffError,
    ValidationFailed,
)
from negotiation.analysis._descriptors import (
    descriptor_summary,
    env_seller_utility,
    episode_descriptors,
    style_summary,
    walk_aways,
)
from negotiation.analysis._metrics import (
    MetricContext,
    context_from_protocol,
    metrics_table,
    outcome_summary,
    score_identity_gap,
)
from negotiation.analysis._multiple import holm, interval_mark
from negotiation.analysis._pairing import (
    METRICS,
    PAIR_KEY,
    add_late_close,
    buyer_split_series,
    combine_paired,
    metric_series,
    paired_values,
)

__all__ = [
    "AnalysisError",
    "BootstrapSettings",
    "ContrastResult",
    "ContrastSpec",
    "FrontierError",
    "Interval",
    "METRICS",
    "MetricContext",
    "MetricError",
    "PAIR_KEY",
    "PairingError",
    "SettingsError",
    "SignoffError",
    "ValidationFailed",
    "add_late_close",
    "bootstrap_p_value",
    "buyer_split_series",
    "cluster_bootstrap",
    "cluster_totals",
    "combine_paired",
    "context_from_protocol",
    "contrast",
    "descriptor_summary",
    "env_seller_utility",
    "episode_descriptors",
    "contrast_values",
    "holm",
    "interval_mark",
    "metric_series",
    "metrics_table",
    "outcome_summary",
    "paired_values",
    "percentile_interval",
    "resample_cluster_means",
    "run_family",
    "score_identity_gap",
    "style_summary",
    "walk_aways",
]
