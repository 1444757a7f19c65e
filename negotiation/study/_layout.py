"""Where a study's files live: the study folders, and every path under the results directory.

Under a results directory (default ``outputs/<study>/``, ``results_dir``)::

    scenarios/                        evaluation and pilot scenario tables (scenarios stage)
    tokenizer/                        the language-model ladder's tokenizer (lm studies)
    init/<size>/                      a size's untrained weights (init stage)
    train/<run>/, curves/<run>.csv    a training run's checkpoints and curves (train stage)
    select/<arm>/seller.json          the seller spec every arm is evaluated with (select stage)
    select/<arm>/selection.json       SelectionRecord  (trained arms: the read point)
    pilot/<arm>.json, pilot/<arm>/    PilotRecord (the gate per buyer cell), the pilot's store
    evaluate/<arm>/episodes.parquet   episode table    (docs/architecture.md)
    evaluate/<arm>/turns.parquet      turn table
    evaluate/<arm>/sampling.json      SamplingRecord   (what was sent, what was accepted)
    evaluate/<arm>/metrics.json       headline metrics of the arm
    panel/<arm>/episodes.parquet      the arm against the exploratory buyer panel (panel stage)
    validate/report.json, docs/       validation report and Data Docs (validate stage)
    analyze/contrasts.json, ...       ContrastResult list, metrics, guards (analyze stage)
    report/                           the report and the transcript viewer (report stage)
    audit.json                        the audit report (audit stage)

Every reader and writer takes its path from here; nothing else spells these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from negotiation._root import find_root
from negotiation.names import check_name

__all__ = ["GPU_SUFFIX", "RESULTS_ROOT", "ResultsLayout", "default_root", "registry_dir", "results_dir", "study_dir"]

RESULTS_ROOT = "outputs"
GPU_SUFFIX = "-gpu"
"""What names a study's GPU profile beside its own: ``outputs/<study>-gpu``, ``pipelines/plans/<study>-gpu.yaml``."""
"""Folder under the repository root holding one results directory per study."""


def default_root() -> Path:
    """The repository root: ``$NEGO_ROOT``, else the working directory or its nearest parent
    holding ``protocol/`` and ``registry/`` (``negotiation._root``)."""
    return find_root()


def study_dir(study: str, root: Path | None = None) -> Path:
    """``<root>/protocol/<study>``: the frozen protocol, arm matrix and lock."""
    check_name("study", study)
    return Path(root or default_root()) / "protocol" / study


def registry_dir(study: str, root: Path | None = None) -> Path:
    """``<root>/registry/<study>``: deviations, added arms, sign-offs, continuations."""
    return Path(root or default_root()) / "registry" / study


def results_dir(study: str, root: Path | None = None, profile: str = "cpu") -> Path:
    """The default results directory of ``study``'s ``profile``: ``<root>/outputs/<study>`` (the GPU
    profile's: ``outputs/<study>-gpu``); with ``root`` ``Path()`` it is the relative path the
    pipeline files name."""
    check_name("study", study)
    name = f"{study}{GPU_SUFFIX}" if profile == "gpu" else study
    return (Path(root) if root is not None else default_root()) / RESULTS_ROOT / name


@dataclass(frozen=True)
class ResultsLayout:
    """Paths of everything the pipeline writes under one results directory."""

    dir: Path
    """The results directory, e.g. ``outputs/demo``."""

    @property
    def scenarios(self) -> Path:
        return self.dir / "scenarios"

    @property
    def tokenizer(self) -> Path:
        return self.dir / "tokenizer"

    def init(self, size: str) -> Path:
        return self.dir / "init" / size

    def train(self, run: str) -> Path:
        return self.dir / "train" / run

    @property
    def train_root(self) -> Path:
        return self.dir / "train"

    def curves(self, run: str) -> Path:
        return self.dir / "curves" / f"{run}.csv"

    def select(self, arm: str) -> Path:
        return self.dir / "select" / arm

    def selection(self, arm: str) -> Path:
        return self.select(arm) / "selection.json"

    def seller(self, arm: str) -> Path:
        return self.select(arm) / "seller.json"

    def pilot(self, arm: str) -> Path:
        return self.dir / "pilot" / f"{arm}.json"

    def pilot_store(self, arm: str) -> Path:
        """The pilot episodes of an arm (resumable like the full run)."""
        return self.dir / "pilot" / arm

    def evaluate(self, arm: str) -> Path:
        return self.dir / "evaluate" / arm

    def episodes(self, arm: str) -> Path:
        return self.evaluate(arm) / "episodes.parquet"

    def turns(self, arm: str) -> Path:
        return self.evaluate(arm) / "turns.parquet"

    def sampling(self, arm: str) -> Path:
        return self.evaluate(arm) / "sampling.json"

    def metrics(self, arm: str) -> Path:
        return self.evaluate(arm) / "metrics.json"

    @property
    def panel_root(self) -> Path:
        """Every arm's episodes against the study's exploratory buyer panel (``Study.panel``)."""
        return self.dir / "panel"

    def panel(self, arm: str) -> Path:
        return self.panel_root / arm

    def panel_episodes(self, arm: str) -> Path:
        return self.panel(arm) / "episodes.parquet"

    def panel_turns(self, arm: str) -> Path:
        return self.panel(arm) / "turns.parquet"

    @property
    def validate(self) -> Path:
        return self.dir / "validate"

    @property
    def validation_report(self) -> Path:
        return self.validate / "report.json"

    @property
    def analyze(self) -> Path:
        return self.dir / "analyze"

    @property
    def contrasts(self) -> Path:
        return self.analyze / "contrasts.json"

    @property
    def summary(self) -> Path:
        return self.analyze / "summary.json"

    @property
    def report(self) -> Path:
        return self.dir / "report"

    @property
    def audit(self) -> Path:
        return self.dir / "audit.json"

    def exists(self) -> bool:
        """Whether any result the audit reads is present."""
        return any((self.dir / sub).exists() for sub in ("select", "pilot", "evaluate", "analyze"))

    def selections(self) -> list[Path]:
        """Every ``select/<arm>/selection.json`` present."""
        return sorted((self.dir / "select").glob("*/selection.json"))

    def pilots(self) -> list[Path]:
        """Every ``pilot/<arm>.json`` present."""
        return sorted((self.dir / "pilot").glob("*.json"))

    def samplings(self) -> list[Path]:
        """Every ``evaluate/<arm>/sampling.json`` present."""
        return sorted((self.dir / "evaluate").glob("*/sampling.json"))

    def evaluated(self) -> list[Path]:
        """Every ``evaluate/<arm>/`` folder present."""
        folder = self.dir / "evaluate"
        return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def arms_with_results(self) -> dict[str, list[Path]]:
        """Arm names that have any result file, with those files (names come from file/folder names)."""
        found: dict[str, list[Path]] = {}
        for path in sorted((self.dir / "select").glob("*/*.json")):
            found.setdefault(path.parent.name, []).append(path)
        for path in self.pilots():
            found.setdefault(path.stem, []).append(path)
        for folder in self.evaluated():
            found.setdefault(folder.name, []).append(folder)
        return found
