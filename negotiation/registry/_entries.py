"""``registry/<study>/`` as loaded: deviations, hand-read sign-offs, and the added arms and
continuations (their models live in ``negotiation.study``), with every file-level problem.

Layout::

    registry/<study>/deviations/NNNN-slug.yaml   one Deviation each
    registry/<study>/arms.yaml                   AddedArms (keyed by arm name, like arms.yaml)
    registry/<study>/signoffs/<arm>.yaml         one SignOff per hand-read arm
    registry/<study>/continuations.yaml          Continuations (branch steps off the rule)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model
from negotiation.study import (
    AddedArm,
    ContinuationEntry,
    added_arms_path,
    continuations_path,
    default_root,
    load_added_arms,
    load_continuations,
    registry_dir,
)

from negotiation.registry._deviation import DeviationLog, load_deviation_log
from negotiation.registry._history import gone_since_committed, history_root

__all__ = ["Registry", "SignOff", "deleted_signoffs", "load_registry"]


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


def deleted_signoffs(folder: Path, root: Path) -> list[str]:
    """A sign-off ever committed and now gone is a finding: deleting one turned a trained arm's
    guard from read to "pending", which passes (git history of ``registry/``; none outside git)."""
    if not history_root(root):
        return []
    relative = folder.resolve().relative_to(root.resolve()).as_posix()
    return [f"{name}:<file>: was committed and is gone; a sign-off is never deleted (record a new one, "
            "or a deviation)" for name in gone_since_committed(root, relative)]


def load_registry(study: str, root: Path | None = None) -> Registry:
    """Load ``registry/<study>/``; a missing folder is an empty registry, never an error."""
    root = Path(root or default_root())
    folder = registry_dir(study, root)
    log, problems = load_deviation_log(folder / "deviations", root=root)
    added = load_added_arms(added_arms_path(study, root), study, root, problems)
    signoffs = _load_signoffs(folder / "signoffs", root, problems)
    continuations = load_continuations(continuations_path(study, root), study, root, problems)
    return Registry(root, study, log, added, signoffs, continuations, problems)
