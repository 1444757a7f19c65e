"""Files the pipeline writes and the audit reads, with one typed definition for both sides.

Under a results directory (default ``outputs/<study>/``)::

    select/<arm>/seller.json          the seller spec every arm is evaluated with (select stage)
    select/<arm>/selection.json       SelectionRecord  (trained arms: the read point)
    pilot/<arm>.json                  PilotRecord      (pilot stage: the gate per buyer cell)
    evaluate/<arm>/episodes.parquet   episode table    (docs/architecture.md)
    evaluate/<arm>/sampling.json      SamplingRecord   (what was sent, what was accepted)
    analyze/contrasts.json            contrast results (ContrastResult list, ``negotiation.study``)

Writers call ``write_record``; every record carries the protocol hash it was produced under.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from negotiation.protocol import SamplingSettings, StrictModel

__all__ = [
    "PilotCell", "PilotRecord", "SamplingRecord", "SamplingUse", "SelectionRecord", "gate_passes",
    "write_record",
]


class SelectionRecord(StrictModel):
    """``select/<arm>/selection.json``: which checkpoint of a trained arm's run is evaluated."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name."""
    arm: str
    """Arm name; equals the file stem."""
    run: str
    """Training run the checkpoint belongs to."""
    parent_step: int | None = Field(ge=0)
    """Step of the parent run this continuation branched from; null for an initial run."""
    rule_step: int = Field(ge=0)
    """Step of the run (own numbering) the read-point rule asks for."""
    step: int = Field(ge=0)
    """Step of the run actually read."""
    substitution: bool
    """True when the rule's step was missing and the nearest earlier one was read."""
    available_steps: tuple[int, ...]
    """Checkpoint steps of the run that existed when the rule was applied."""
    checkpoint: str
    """Directory of the checkpoint read."""
    protocol_hash: str
    """Protocol hash the selection was made under."""

    @model_validator(mode="after")
    def _honest(self) -> "SelectionRecord":
        if self.step not in self.available_steps:
            raise ValueError(f"step {self.step} is not among available_steps")
        if self.substitution != (self.step != self.rule_step):
            raise ValueError(f"substitution={self.substitution} but step {self.step} vs rule_step {self.rule_step}")
        return self

    @property
    def combined_step(self) -> int:
        """Parent steps up to the branch plus own steps."""
        return (self.parent_step or 0) + self.step


def gate_passes(*, episodes: int, bad_parses: int, error_rows: int, episodes_per_cell: int,
                max_bad_parses: int) -> bool:
    """THE pilot-gate rule (protocol ``pilot_gate``, Appendix K), read by the pilot, its record and
    the audit: a cell passes when none of its pilot episodes is an error row, at least
    ``episodes_per_cell`` completed, and the counted turns hold at most ``max_bad_parses`` bad
    parses. ``episodes`` counts completed (non-error) episodes."""
    return error_rows == 0 and episodes >= episodes_per_cell and bad_parses <= max_bad_parses


class PilotCell(StrictModel):
    """Pilot result of one (arm, evaluation buyer) cell."""

    buyer: str
    """Evaluation buyer name."""
    episodes: int = Field(ge=0)
    """Pilot episodes run."""
    turns: int = Field(ge=0)
    """Turns counted (the protocol's ``pilot_gate.counted_turns``)."""
    bad_parses: int = Field(ge=0)
    """Counted turns that failed to parse."""
    passed: bool
    """Whether the cell cleared the gate."""


class PilotRecord(StrictModel):
    """``pilot/<arm>.json``: the pre-run pilot gate of one arm."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name."""
    arm: str
    """Arm name; equals the file stem."""
    passed: bool
    """True when every cell passed."""
    cells: tuple[PilotCell, ...] = Field(min_length=1)
    """One entry per evaluation buyer."""
    protocol_hash: str
    """Protocol hash the pilot ran under."""

    @model_validator(mode="after")
    def _consistent(self) -> "PilotRecord":
        if self.passed != all(cell.passed for cell in self.cells):
            raise ValueError(f"passed={self.passed} disagrees with the cells")
        return self

    @property
    def bad_parses(self) -> int:
        return sum(cell.bad_parses for cell in self.cells)

    @property
    def turns(self) -> int:
        return sum(cell.turns for cell in self.cells)


class SamplingUse(StrictModel):
    """Decoding settings of one agent: as sent, and as the provider reports using them."""

    requested: SamplingSettings
    """What the harness sent (null fields: not sent)."""
    accepted: SamplingSettings | None = None
    """What the provider reports it used, when it says; null when unknown."""


class SamplingRecord(StrictModel):
    """``evaluate/<arm>/sampling.json``: sampling used by the seller and each buyer of an arm."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name."""
    arm: str
    """Arm name; equals the folder name."""
    seller: SamplingUse
    """The arm's seller."""
    buyers: dict[str, SamplingUse]
    """Each evaluation buyer, by name."""
    protocol_hash: str
    """Protocol hash the evaluation ran under."""


def write_record(record: BaseModel, path: Path) -> Path:
    """Write a record as indented JSON, creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path
