"""Where a study's results live: every path under the results directory, spelled once.

Under a results directory (default ``outputs/<study>/``)::

    select/<arm>/seller.json          the seller spec every arm is evaluated with (select stage)
    select/<arm>/selection.json       SelectionRecord  (trained arms: the read point)
    pilot/<arm>.json                  PilotRecord      (pilot stage: the gate per buyer cell)
    evaluate/<arm>/episodes.parquet   episode table    (docs/architecture.md)
    evaluate/<arm>/sampling.json      SamplingRecord   (what was sent, what was accepted)
    analyze/contrasts.json            contrast results (ContrastResult list)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ResultsLayout"]


@dataclass(frozen=True)
class ResultsLayout:
    """Paths of the files the audit reads under one results directory."""

    dir: Path
    """The results directory, e.g. ``outputs/demo``."""

    def selection(self, arm: str) -> Path:
        return self.dir / "select" / arm / "selection.json"

    def seller(self, arm: str) -> Path:
        return self.dir / "select" / arm / "seller.json"

    def pilot(self, arm: str) -> Path:
        return self.dir / "pilot" / f"{arm}.json"

    def episodes(self, arm: str) -> Path:
        return self.dir / "evaluate" / arm / "episodes.parquet"

    def sampling(self, arm: str) -> Path:
        return self.dir / "evaluate" / arm / "sampling.json"

    @property
    def contrasts(self) -> Path:
        return self.dir / "analyze" / "contrasts.json"

    def exists(self) -> bool:
        """Whether any result the audit reads is present."""
        return any((self.dir / sub).exists() for sub in ("select", "pilot", "evaluate", "analyze"))

    def arms_with_results(self) -> dict[str, list[Path]]:
        """Arm names that have any result file, with those files (names come from file/folder names)."""
        found: dict[str, list[Path]] = {}
        for path in sorted((self.dir / "select").glob("*/*.json")):
            found.setdefault(path.parent.name, []).append(path)
        for path in sorted((self.dir / "pilot").glob("*.json")):
            found.setdefault(path.stem, []).append(path)
        evaluate = self.dir / "evaluate"
        for folder in sorted(p for p in evaluate.iterdir() if p.is_dir()) if evaluate.is_dir() else []:
            found.setdefault(folder.name, []).append(folder)
        return found
