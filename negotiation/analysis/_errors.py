"""Exceptions raised by the analysis package.

Every message names where the bad input came from (a file, or the table or argument
that stands in for one), the key, and the bad value, as ``where:key: reason``.
"""

from __future__ import annotations

from negotiation.errors import NegotiationError


class AnalysisError(NegotiationError, ValueError):
    """Base class for bad input to the analysis (tables, settings, arguments)."""

    def __init__(self, where: str, key: str, reason: str) -> None:
        self.where = where
        self.key = key
        self.reason = reason
        super().__init__(f"{where}:{key}: {reason}")


class PairingError(AnalysisError):
    """Two arms do not cover the same scenario keys, so they cannot be paired."""


class MetricError(AnalysisError):
    """A metric name is unknown, or a column it needs is missing or malformed."""


class SettingsError(AnalysisError):
    """A statistics or guard setting is out of its allowed range."""


class ValidationFailed(AnalysisError):
    """The episode tables failed a great-expectations check; the report must not be built."""


class FrontierError(AnalysisError):
    """A scenario cannot be turned into the bargaining problem the frontier needs."""
