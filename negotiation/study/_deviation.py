"""Deviations: one YAML file per departure from the frozen protocol, append-only.

``registry/<study>/deviations/NNNN-slug.yaml``. An entry is never edited after it is merged; it
is amended by a new entry whose ``supersedes`` names it. Only the head of a supersession chain
covers anything, so the amending entry restates the arms and cells it covers.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from pydantic import Field, model_validator

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model
from negotiation.study._deviation_index import INDEX_FILE, index_problems

__all__ = ["CATEGORIES", "Cell", "Deviation", "DeviationLog", "deviation_filename", "load_deviation_log", "slugify"]

Category = Literal[
    "harness_change", "checkpoint_substitution", "read_point", "arm_added", "gate_override",
    "analysis_added", "not_run", "recipe_change", "serving_change", "sampling_change", "rerun",
]
CATEGORIES: tuple[str, ...] = Category.__args__
FILE_NAME = re.compile(r"^(\d{4})-([a-z0-9]+(?:-[a-z0-9]+)*)\.yaml$")


def slugify(title: str, max_chars: int = 60) -> str:
    """File-name slug of a title: lower-case words joined by hyphens, cut at a word boundary."""
    slug = ""
    for word in re.findall(r"[a-z0-9]+", title.lower()):
        if slug and len(slug) + 1 + len(word) > max_chars:
            break
        slug = f"{slug}-{word}" if slug else word[:max_chars]
    return slug or "entry"


def deviation_filename(entry_id: int, title: str) -> str:
    """``NNNN-slug.yaml`` for an entry."""
    return f"{entry_id:04d}-{slugify(title)}.yaml"


class Cell(StrictModel):
    """Part of an arm's evaluation: the arm against one buyer, optionally on one domain."""

    arm: str
    """Arm name."""
    buyer: str | None = None
    """Evaluation buyer name, or null for every buyer."""
    domain: str | None = None
    """Domain name, or null for every domain."""


class Deviation(StrictModel):
    """One logged departure from the frozen protocol."""

    version: Literal[1]
    """File format version."""
    id: int = Field(ge=1)
    """Sequential id; the file name starts with it, zero-padded to four digits."""
    date: dt.date
    """Date the entry was recorded."""
    title: str = Field(min_length=3)
    """One-line title."""
    category: Category
    """Kind of departure; each audit check accepts only the categories that can cover it."""
    all_arms: bool = False
    """True when the departure applies to every arm of the study."""
    arms: tuple[str, ...] = ()
    """Arms the departure applies to in full."""
    cells: tuple[Cell, ...] = ()
    """Parts of arms (arm x buyer x domain) the departure applies to."""
    what_changed: str = Field(min_length=3)
    """What was done differently from the protocol."""
    why: str = Field(min_length=3)
    """Why."""
    expected_impact: str = Field(min_length=3)
    """Expected effect on the reported results."""
    supersedes: int | None = Field(default=None, ge=1)
    """Id of the entry this one amends; the amended entry then covers nothing."""
    source: str | None = None
    """Where the departure is reported (e.g. a section of the paper)."""
    values: dict[str, bool | int | float | str] = Field(default_factory=dict)
    """Frozen protocol keys (dotted, e.g. ``sizes.31b.eval_accelerators``) and the value the covered
    arms ran with instead. The frozen protocol keeps what was frozen; the pipeline runs each arm
    under ``effective_protocol`` (the frozen one with these values applied)."""

    @model_validator(mode="after")
    def _scope(self) -> "Deviation":
        if self.all_arms and (self.arms or self.cells):
            raise ValueError("all_arms entries list no arms or cells")
        if not (self.all_arms or self.arms or self.cells):
            raise ValueError("name the arms or cells covered, or set all_arms: true")
        if self.supersedes == self.id:
            raise ValueError(f"entry {self.id} cannot supersede itself")
        if self.values and self.cells:
            raise ValueError("values apply to whole arms: scope the entry by arms or all_arms, not cells")
        return self

    def covers(self, arm: str, buyer: str | None = None, domain: str | None = None) -> bool:
        """Whether the entry applies to ``arm`` (restricted to ``buyer``/``domain`` if given)."""
        if self.all_arms or arm in self.arms:
            return True
        return any(
            cell.arm == arm
            and (cell.buyer is None or cell.buyer == buyer)
            and (cell.domain is None or cell.domain == domain)
            for cell in self.cells
        )

    def named_arms(self) -> set[str]:
        """Every arm the entry names, in ``arms`` or in ``cells``."""
        return set(self.arms) | {cell.arm for cell in self.cells}


@dataclass
class DeviationLog:
    """The valid entries of a study's log, with the file each came from."""

    entries: dict[int, Deviation] = field(default_factory=dict)
    """Entries by id."""
    paths: dict[int, Path] = field(default_factory=dict)
    """File of each entry."""
    naming_problems: list[str] = field(default_factory=list)
    """Valid entries left out because their id repeats another or disagrees with the file name."""
    index_problems: list[str] = field(default_factory=list)
    """Departures from the index of issued entries: deleted, edited or unindexed entries."""

    def superseded_ids(self) -> set[int]:
        """Ids some other entry supersedes."""
        return {e.supersedes for e in self.entries.values() if e.supersedes is not None}

    def active(self) -> list[Deviation]:
        """Heads of supersession chains, by id."""
        gone = self.superseded_ids()
        return [e for i, e in sorted(self.entries.items()) if i not in gone]

    def covering(
        self, arm: str, categories: Iterable[str], buyer: str | None = None, domain: str | None = None
    ) -> list[int]:
        """Ids of active entries of one of ``categories`` that cover the arm (cell)."""
        wanted = set(categories)
        return [e.id for e in self.active() if e.category in wanted and e.covers(arm, buyer, domain)]

    def next_id(self) -> int:
        """Id for a new entry."""
        return max(self.entries, default=0) + 1


def _file_problems(path: Path, entry: Deviation, shown: str) -> list[str]:
    match = FILE_NAME.match(path.name)
    if match is None:
        return [f"{shown}:<file>: name must be NNNN-slug.yaml (four digits, lower-case hyphenated slug)"]
    if int(match.group(1)) != entry.id:
        return [f"{shown}:id: {entry.id} differs from the file name's number {int(match.group(1))}"]
    return []


def load_deviation_log(folder: Path, *, root: Path | None = None) -> tuple[DeviationLog, list[str]]:
    """Read every ``*.yaml`` in ``folder``; return the valid entries and ``file:key: reason`` problems."""
    log, problems = DeviationLog(), []
    present = sorted(p for p in Path(folder).iterdir() if p.name not in ("README.md", INDEX_FILE)) \
        if Path(folder).is_dir() else []
    files = [p for p in present if p.is_file() and not p.is_symlink()]
    problems.extend(f"{display_path(p, root)}:<file>: not a regular file (a folder, FIFO or link); entries are "
                    "NNNN-slug.yaml files" for p in present if p not in files)
    for path in files:
        shown = display_path(path, root)
        if path.suffix != ".yaml":
            # A stray .yml or .txt would otherwise be skipped in silence: fail closed instead.
            if path.name != "README.md":
                problems.append(f"{shown}:<file>: not a deviation entry (entries are NNNN-slug.yaml)")
            continue
        try:
            entry = load_yaml_model(Deviation, path, root=root)
        except ConfigError as exc:
            problems.extend(str(exc).splitlines())
            continue
        file_issues = _file_problems(path, entry, shown)
        if entry.id in log.entries:
            file_issues.append(f"{shown}:id: {entry.id} is also the id of {log.paths[entry.id].name}")
        log.naming_problems.extend(file_issues)
        if not file_issues:
            log.entries[entry.id] = entry
            log.paths[entry.id] = path
    numbered = {int(m.group(1)): p for p in files if (m := FILE_NAME.match(p.name))}
    log.index_problems = index_problems(Path(folder), numbered, root=root)
    return log, problems
