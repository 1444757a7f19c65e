"""Contrast records: what ``analyze/contrasts.json`` holds, read by the report and the audit.

The analysis computes them (``negotiation.analysis``); they are defined here, below both the
analysis and the registry, so the audit can validate the file without importing the analysis.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

__all__ = ["ContrastResult", "ContrastSpec", "Interval"]


class Interval(BaseModel):
    """A paired contrast's point estimate, percentile interval and bootstrap p-value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    mean: float
    """Mean paired difference over every paired episode (the point estimate)."""
    ci: tuple[float, float]
    """Percentile bootstrap interval (low, high) at ``level``."""
    p: float
    """Two-sided bootstrap p-value, 2·Φ(−|mean| / SD of the draws) (``bootstrap_p_value``)."""
    clusters: int
    """Number of seed clusters resampled."""
    episodes: int
    """Number of paired episodes (or scenarios) behind the estimate."""
    resamples: int
    """Resamples behind the reported interval (after any re-run)."""
    level: float
    """Confidence level of ``ci``."""
    mc_error: tuple[float, float]
    """Monte Carlo band half-width of the low and the high endpoint."""
    rerun: bool
    """True when a bound sat within its Monte Carlo band of zero and the interval was re-run."""

    @property
    def excludes_zero(self) -> bool:
        """True when both ends of the interval lie strictly on one side of zero."""
        return self.ci[0] > 0.0 or self.ci[1] < 0.0

    @property
    def half_width(self) -> float:
        """Half the interval's width, the precision figure of a panel."""
        return (self.ci[1] - self.ci[0]) / 2.0


class ContrastSpec(BaseModel):
    """One paired contrast: a weighted sum of arms on one metric and one panel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    name: str
    """Identifier shown in tables (e.g. ``gain_31b_shared``)."""
    weights: dict[str, float]
    """Arm name -> weight; ``{A: 1, B: -1}`` is A − B."""
    metric: str = "S"
    """A name from ``METRICS``."""
    domains: tuple[str, ...] | None = None
    """Restrict to these domains (the held-out panel), or None for every domain."""
    buyer_split: tuple[str, str] | None = None
    """(minuend buyer, subtrahend buyer): contrast the per-scenario buyer split instead."""
    primary: bool = False
    """True for the prespecified primary family (Holm-corrected); else exploratory."""
    buyers: tuple[str, ...] | None = None
    """Restrict to episodes against these evaluation buyers, or None for both (App. E: the 10× arm's
    gain against each buyer alone)."""

    @model_serializer(mode="wrap")
    def _omit_unset_buyers(self, handler):
        # Written only when set, so contrasts.json of every contrast without it keeps its bytes.
        data = handler(self)
        if self.buyers is None:
            data.pop("buyers", None)
        return data


class ContrastResult(BaseModel):
    """A contrast's interval with its multiplicity treatment and mark."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    spec: ContrastSpec
    """What was contrasted."""
    interval: Interval
    """Point estimate, interval, p-value and cluster count."""
    holm_p: float | None = Field(default=None)
    """Holm-adjusted p-value (primary contrasts only)."""
    holm_rejected: bool | None = None
    """Whether Holm rejects at the protocol's alpha (primary contrasts only)."""
    mark: str
    """``*`` (primary, survives Holm), ``e`` (exploratory, interval excludes 0) or empty."""


