"""``registry/<study>/`` as loaded (by ``load_study``, once): deviations, hand-read sign-offs, and the added arms and
continuations (their models live in ``negotiation.study``), with every file-level problem.

Layout::

    registry/<study>/deviations/NNNN-slug.yaml   one Deviation each
    registry/<study>/arms.yaml                   AddedArms (keyed by arm name, like arms.yaml)
    registry/<study>/signoffs/<arm>.yaml         one SignOff per hand-read arm
    registry/<study>/continuations.yaml          Continuations (branch steps off the rule)
    registry/<study>/panel.yaml                  Panel (an exploratory buyer panel), if any
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model
from negotiation.study._arms import AddedArm, added_arms_path, load_added_arms
from negotiation.study._continuations import ContinuationEntry, continuations_path, load_continuations
from negotiation.study._deviation import DeviationLog, load_deviation_log
from negotiation.study._layout import default_root, registry_dir
from negotiation.study._panel import Panel, load_panel, panel_path

__all__ = ["Registry", "SignOff", "load_registry"]


class SignOff(StrictModel):
    """A reader's verdict on an arm's transcripts (the hand-read guard)."""

    version: Literal[1]
    """File format version."""
    arm: str
    """Arm read; equals the file stem."""
    reader: str = Field(min_length=1)
    """Who read the transcripts."""
    date: dt.date
    """When."""
    transcripts_read: int = Field(gt=0)
    """Transcripts read in total."""
    domain_families: tuple[Literal["training", "held_out"], ...] = Field(min_length=1)
    """Domain families the transcripts were drawn from."""
    verdict: Literal["pass", "fail"]
    """``pass``: no degenerate behaviour found; ``fail``: the arm's results should not count."""
    notes: str = ""
    """What the reader saw."""
    source: str | None = None
    """Where the reading is reported, when it was not done in this checkout (e.g. the paper's
    Appendix E for the paper study's arms)."""


@dataclass
class Registry:
    """A study's registry as loaded, with every file-level problem found on the way."""

    root: Path
    """Repository root."""
    study: str
    """Study name."""
    deviations: DeviationLog
    """Valid deviation entries."""
    added: dict[str, AddedArm] = field(default_factory=dict)
    """Valid added arms."""
    signoffs: dict[str, SignOff] = field(default_factory=dict)
    """Valid sign-offs by arm."""
    continuations: dict[str, ContinuationEntry] = field(default_factory=dict)
    """Continuation runs that branch off the protocol's rule, by run name."""
    problems: list[str] = field(default_factory=list)
    """``file:key: reason`` for every file that failed to read or validate."""
    unreadable: list[str] = field(default_factory=list)
    """The problems of ``arms.yaml``, ``continuations.yaml`` and ``panel.yaml`` (part of ``problems``): these leave
    the study unreadable, so ``load_study`` raises them; the others are the audit's findings."""
    panel: Panel | None = None
    """The exploratory buyer panel, when the study declares one."""

    @property
    def dir(self) -> Path:
        return registry_dir(self.study, self.root)

    def show(self, path: Path) -> str:
        return display_path(path, self.root)


README = "README.md"  # a folder's own documentation, never an entry


def _load_signoffs(folder: Path, root: Path, problems: list[str]) -> dict[str, SignOff]:
    signoffs = {}
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        if path.name == README:
            continue
        shown = display_path(path, root)
        if path.suffix != ".yaml":
            problems.append(f"{shown}:<file>: not a sign-off (sign-offs are <arm>.yaml)")
            continue
        try:
            entry = load_yaml_model(SignOff, path, root=root)
        except ConfigError as exc:
            problems.extend(str(exc).splitlines())
            continue
        if entry.arm != path.stem:
            problems.append(f"{shown}:arm: {entry.arm!r} differs from the file stem {path.stem!r}")
            continue
        signoffs[entry.arm] = entry
    return signoffs


def load_registry(study: str, root: Path | None = None) -> Registry:
    """Load ``registry/<study>/``; a missing folder is an empty registry, never an error. Stages
    and commands read it as ``load_study(...).registry``; the audit calls this alone only when the
    study itself does not load (to report the registry's findings still)."""
    root = Path(root or default_root())
    folder = registry_dir(study, root)
    log, problems = load_deviation_log(folder / "deviations", root=root)
    unreadable: list[str] = []
    added = load_added_arms(added_arms_path(study, root), study, root, unreadable)
    problems.extend(unreadable)
    signoffs = _load_signoffs(folder / "signoffs", root, problems)
    before = len(problems)
    continuations = load_continuations(continuations_path(study, root), study, root, problems)
    panel = load_panel(panel_path(study, root), study, root, problems)
    unreadable.extend(problems[before:])
    return Registry(root, study, log, added, signoffs, continuations, problems, unreadable, panel)
