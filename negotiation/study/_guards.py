"""Guard thresholds this project adds where a study's source gives none: ``registry/<study>/guards.yaml``.

The paper names its four prespecified guards (Appendix E) but gives no number for any of them, and
its post-hoc list came later through the deviation log. A threshold the source states is frozen in
``protocol/<study>/protocol.yaml`` (``guards``); one it does not state is left ``null`` there and
given here, in an entry of its own kind that says it is the project's. ``resolve_guards`` merges the
two into the rules the analysis applies and records where each number came from; a threshold set in
both places, or in neither, is an error naming the file and key (the audit's ``guard_thresholds``
check reports the same). Without a ``post_hoc`` block the post-hoc thresholds are the schema's
defaults below, which are this project's choices too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import DealRateGuard, Guards, ParseRateGuard, StrictModel, TurnsGuard, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

__all__ = ["PRESPECIFIED_THRESHOLDS", "GuardRules", "GuardThresholds", "PostHocThresholds", "ProjectPrespecified", "guard_rule_problems",
           "load_guard_thresholds", "resolve_guards", "study_guard_rules"]

PRESPECIFIED_THRESHOLDS = {"deal_rate": ("max_drop",), "parse_rate": ("max_increase",),
                     "turns": ("max_fraction_of_cap", "max_increase_over_base")}
"""Numeric thresholds of the prespecified guards, by guard."""


class PostHocThresholds(StrictModel):
    """Thresholds of the post-hoc guards: this project's choices (docs/analysis.md), never a source's."""

    version: Literal[1] = 1
    """Schema version of this record."""
    walk_away_increase: float = Field(default=0.02, ge=0)
    """Largest rise in the walk-away rate over base."""
    json_leak_increase: float = Field(default=0.05, ge=0)
    """Largest rise in the share of seller turns leaking JSON into prose."""
    template_tags: int = Field(default=0, ge=0)
    """Template-tag leaks allowed in buyer-visible text."""
    placeholder_increase: float = Field(default=0.01, ge=0)
    """Largest rise in unfilled placeholders per episode."""
    buyer_split_increase: float = Field(default=0.05, ge=0)
    """Largest rise of the same-family buyer split over base."""
    opener_ratio: float = Field(default=1.5, gt=1)
    """Top three-word opener share may not exceed the comparator's times this ..."""
    opener_increase: float = Field(default=0.05, ge=0)
    """... and the comparator's plus this at once."""
    role_confusion_ratio: float = Field(default=2.0, gt=1)
    """Held-out buyer's-voice opener rate may not exceed the comparator's times this ..."""
    role_confusion_increase: float = Field(default=0.25, ge=0)
    """... and the comparator's plus this at once."""


class ProjectPrespecified(StrictModel):
    """Thresholds of prespecified guards whose source gives no number (each left null in the protocol)."""

    deal_rate: DealRateGuard | None = None
    """Guard 1's threshold."""
    parse_rate: ParseRateGuard | None = None
    """Guard 2's threshold."""
    turns: TurnsGuard | None = None
    """Guard 3's thresholds."""


class GuardThresholds(StrictModel):
    """``registry/<study>/guards.yaml``: guard thresholds that are this project's, not the source's."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    source: Literal["project"]
    """Always ``project``: these numbers are this project's additions, shown as such in the report."""
    reason: str = Field(min_length=1)
    """Why these numbers (what they reproduce, what the source says and does not)."""
    prespecified: ProjectPrespecified = Field(default_factory=ProjectPrespecified)
    """Numbers for prespecified guards the frozen protocol leaves null."""
    post_hoc: PostHocThresholds | None = None
    """Post-hoc guard thresholds (None: the schema's defaults)."""
    deviations: tuple[int, ...] = ()
    """Entries of category ``analysis_added`` that added the post-hoc guards (needed with ``post_hoc``)."""


class GuardRules(StrictModel):
    """The thresholds the analysis applies, and where each came from."""

    prespecified: Guards
    """The protocol's guards with every threshold filled."""
    post_hoc: PostHocThresholds
    """Post-hoc thresholds."""
    sources: dict[str, str]
    """Guard name -> ``protocol/<study>/protocol.yaml`` (frozen), ``registry/<study>/guards.yaml`` or
    ``schema default`` (this project's)."""


def load_guard_thresholds(study: str, root: Path | None = None) -> GuardThresholds | None:
    """``registry/<study>/guards.yaml``, or None when the study has none (ConfigError when malformed)."""
    path = registry_dir(study, root) / "guards.yaml"
    if not path.exists():
        return None
    loaded = load_yaml_model(GuardThresholds, path, root=root)
    if loaded.study != study:
        raise ConfigError(f"{display_path(path, root)}:study: {loaded.study!r} differs from {study!r}")
    return loaded


def guard_rule_problems(protocol, added: GuardThresholds | None) -> list[tuple[str, str]]:
    """``(where, reason)`` for every prespecified threshold given in neither place or in both."""
    problems = []
    for guard, keys in PRESPECIFIED_THRESHOLDS.items():
        frozen = getattr(protocol.guards, guard)
        project = getattr(added.prespecified, guard) if added else None
        for key in keys:
            if getattr(frozen, key) is None and (project is None or getattr(project, key) is None):
                problems.append((f"protocol.yaml:guards.{guard}.{key}", "no threshold: the protocol leaves it null "
                                 "and registry guards.yaml gives none"))
            elif getattr(frozen, key) is not None and project is not None and getattr(project, key) is not None:
                problems.append((f"guards.yaml:prespecified.{guard}.{key}", "the frozen protocol sets this threshold; "
                                 "changing it needs a deviation with values, not a registry threshold"))
    return problems


def resolve_guards(protocol, added: GuardThresholds | None) -> GuardRules:
    """Merge the frozen protocol's thresholds with the registry's; ConfigError on a gap or a clash."""
    problems = guard_rule_problems(protocol, added)
    if problems:
        raise ConfigError("\n".join(f"{protocol.study}:{where}: {reason}" for where, reason in problems))
    here = f"registry/{protocol.study}/guards.yaml"
    update, sources = {}, {"hand_read": f"protocol/{protocol.study}/protocol.yaml"}
    for guard, keys in PRESPECIFIED_THRESHOLDS.items():
        frozen = getattr(protocol.guards, guard)
        if all(getattr(frozen, key) is not None for key in keys):
            sources[guard] = f"protocol/{protocol.study}/protocol.yaml"
        else:
            update[guard], sources[guard] = getattr(added.prespecified, guard), here
    post_hoc = added.post_hoc if added and added.post_hoc else PostHocThresholds()
    post_source = here if added and added.post_hoc else "schema default (this project's)"
    sources.update({guard: post_source for guard in ("walk_aways", "json_leakage", "template_tags", "placeholders",
                                                     "buyer_family_split", "opener_concentration",
                                                     "held_out_role_confusion")})
    return GuardRules(prespecified=protocol.guards.model_copy(update=update), post_hoc=post_hoc, sources=sources)


def study_guard_rules(study) -> GuardRules:
    """``resolve_guards`` for a loaded ``Study``: its protocol and its ``registry/<study>/guards.yaml``."""
    return study.guard_rules
