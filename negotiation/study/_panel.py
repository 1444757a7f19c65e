"""An exploratory buyer panel (``registry/<study>/panel.yaml``): agents no one here wrote, e.g.
ANAC agents through ``negmas:<Name>``, that every planned seller arm meets on a few domains and
seeds, outside the frozen evaluation (its own tables, no Holm, a report section of its own).

It is registry data, not protocol: a study adds it after the freeze, and the entries it cites
(category ``analysis_added``) say why. The frozen evaluation, its contrasts and guards never read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.names import SAFE_NAME
from negotiation.protocol import Protocol, SeedBlock, StrictModel, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

__all__ = ["PANEL_FILE", "Panel", "load_panel", "panel_path", "panel_problems"]

PANEL_FILE = "panel.yaml"
"""Under ``registry/<study>/``."""


class Panel(StrictModel):
    """``registry/<study>/panel.yaml``."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    description: str = Field(min_length=1)
    """What the panel is and why it is there (the report's section opens with it)."""
    caveat: str = Field(min_length=1)
    """What a reader must know about the agents' provenance; printed wherever the panel appears."""
    deviations: tuple[int, ...] = Field(min_length=1)
    """Ids of the entries that cover the panel (at least one of category ``analysis_added``)."""
    buyers: dict[str, str] = Field(min_length=1)
    """Buyer label (the tables' ``buyer`` column) -> agent spec, e.g. ``negmas:ParsAgent?levels=3``."""
    domains: tuple[str, ...] = Field(min_length=1)
    """Evaluated domains of the protocol the panel plays."""
    seeds: SeedBlock
    """Scenario seeds per domain; each is a resampling cluster of the panel's paired intervals."""


def panel_path(study: str, root: Path) -> Path:
    """``registry/<study>/panel.yaml``."""
    return registry_dir(study, root) / PANEL_FILE


def load_panel(path: Path, study: str, root: Path, problems: list[str]) -> Panel | None:
    """The panel of ``path`` (None when absent or invalid; file problems go to ``problems``)."""
    if not path.exists():
        return None
    try:
        panel = load_yaml_model(Panel, path, root=root)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
        return None
    if panel.study != study:
        problems.append(f"{display_path(path, root)}:study: {panel.study!r} differs from {study!r}")
        return None
    return panel


def panel_problems(panel: Panel, protocol: Protocol) -> list[tuple[str, str]]:
    """``(key, reason)`` where the panel does not fit the protocol: domains it does not evaluate,
    labels that are not names or that the frozen evaluation already uses."""
    problems = [(f"domains.{i}", f"{name!r} is not an evaluated domain; known: {sorted(protocol.domains.evaluated)}")
                for i, name in enumerate(panel.domains) if name not in protocol.domains.evaluated]
    for label in panel.buyers:
        if not SAFE_NAME.fullmatch(label):
            problems.append((f"buyers.{label}", f"label {label!r} is not a safe name ({SAFE_NAME.pattern})"))
        elif label in protocol.buyers.evaluation:
            problems.append((f"buyers.{label}", f"label {label!r} is an evaluation buyer of the protocol"))
    return problems
