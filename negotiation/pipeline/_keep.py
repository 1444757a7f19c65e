"""Keep a results folder's raw tables and records in a folder small enough to commit.

A GPU study's results come home as DVC outputs, checkpoints included: gigabytes that git should
not hold. What a reader needs to audit the study and to rebuild its numbers without a GPU is much
smaller: the episode and turn tables, the records of how each arm was selected, gated, sampled and
trained, the training curves and each run's recorded MLflow run (``mlflow_run.json`` and its
clock), so the ``track`` stage logs the same training runs from the kept folder on a machine
without the weights (their registered versions then say ``weights_in_model: false``). ``keep_results`` copies exactly those, at their paths under
``ResultsLayout``, so ``nego validate / analyze / report / audit --results <kept>`` read the kept
folder as they read the original. Weights, optimizer state, resumable stores and what a later
stage derives (validation, analysis, report, audit) stay behind: the later stages rebuild them.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from negotiation.errors import ConfigError
from negotiation.study import ResultsLayout

ANY = "*"
"""The glob that stands for every arm (or run) name in a layout path."""


def kept_patterns(layout: ResultsLayout) -> list[str]:
    """Glob patterns, relative to ``layout.dir``, of the files ``keep_results`` copies: built from
    the layout's own paths (an arm or run name replaced by ``*``), so none is spelled twice."""
    from negotiation.tracking import RECORD_FILE, TIMES_FILE
    from negotiation.training import TRAINING_INFO_FILE

    per_arm = (layout.seller, layout.selection, layout.pilot, layout.episodes, layout.turns,
               layout.sampling, layout.metrics, layout.panel_episodes, layout.panel_turns)
    paths = [path(ANY) for path in per_arm]
    paths += [layout.curves(ANY), layout.train(ANY) / "*.csv", layout.train(ANY) / "step_*" / TRAINING_INFO_FILE,
              layout.train(ANY) / RECORD_FILE, layout.train(ANY) / TIMES_FILE]
    return [str(path.relative_to(layout.dir)) for path in paths]


@dataclass(frozen=True)
class Kept:
    """What ``keep_results`` copied."""

    files: tuple[Path, ...]
    """Copied files, relative to the kept folder."""
    bytes: int
    """Their total size."""


def keep_results(results_dir: Path | str, out: Path | str) -> Kept:
    """Copy the raw tables and records of ``results_dir`` into ``out`` (same relative paths).

    ``out`` must be new or empty, and not inside ``results_dir``: a kept folder is never merged
    with an older one, so it holds one build's files only. ``ConfigError`` names the folder.
    """
    source, target = ResultsLayout(Path(results_dir)), Path(out)
    if not source.exists():
        raise ConfigError(f"{source.dir}: no results (no select/, pilot/, evaluate/ or analyze/ folder)")
    if target.resolve().is_relative_to(source.dir.resolve()):
        raise ConfigError(f"{target}: the kept folder must lie outside the results folder {source.dir}")
    if target.exists() and any(target.iterdir()):
        raise ConfigError(f"{target}: not empty; keep into a new folder")
    files = sorted({path for pattern in kept_patterns(source) for path in source.dir.glob(pattern)
                    if path.is_file()})
    if not any(path.name == source.episodes(ANY).name for path in files):
        raise ConfigError(f"{source.dir}/evaluate: no episode table to keep")
    for path in files:
        copy = target / path.relative_to(source.dir)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
    return Kept(tuple(path.relative_to(source.dir) for path in files), sum(path.stat().st_size for path in files))
