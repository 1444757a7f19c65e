"""The fixed layout of the policy's features (sizes, capacity), shared by the features, their
per-(domain, preferences) plans and the network; ``_policy_features`` says what each column is."""

from __future__ import annotations

from negotiation.env import Domain

FEATURE_VERSION = 1
MAX_SLOTS = 10
MAX_LEVELS = 6
SLOT_FEATURES = 14
GLOBAL_FEATURES = 10
LEVEL_FEATURES = 4


class FeatureError(ValueError):
    """A domain does not fit the fixed feature layout (too many terms or levels)."""


def check_domain(domain: Domain) -> None:
    """Raise ``FeatureError`` when ``domain`` exceeds the slot or level capacity."""
    if len(domain.terms) > MAX_SLOTS:
        raise FeatureError(f"domain {domain.name!r}:terms: {len(domain.terms)} terms exceed "
                           f"the policy's {MAX_SLOTS} slots")
    for term in domain.terms:
        if term.levels is not None and len(term.levels) > MAX_LEVELS:
            raise FeatureError(f"domain {domain.name!r}:terms.{term.name}.levels: "
                               f"{len(term.levels)} levels exceed {MAX_LEVELS}")
