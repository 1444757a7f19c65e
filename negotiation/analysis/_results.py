"""Stage functions over a results directory: validate, analyze (the DVC stages call these).

Layout (``negotiation.study.ResultsLayout``)::

    evaluate/<arm>/episodes.parquet, evaluate/<arm>/turns.parquet   inputs
    validate/report.json, validate/docs/index.html                  validate stage
    analyze/contrasts.json, metrics.parquet, arms.parquet,           analyze stage
    analyze/guards.json, analyze/frontiers.json
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from negotiation.analysis._analysis import AnalysisResult, run_analysis, bootstrap_settings, write_analysis
from negotiation.analysis._errors import AnalysisError
from negotiation.analysis._tables import RegistryInputs
from negotiation.analysis._validate import ValidationReport, require_valid, validate_episodes, validation_settings
from negotiation.study import ResultsLayout, Study


def scoped(study: Study, arms: Iterable[str] | None) -> Study:
    """``study`` with only ``arms`` planned (``None``: unchanged).

    Validation then expects exactly their tables and the analysis contrasts them alone (the
    primary family shrinks to the pairs present). A part of a study built apart reads this way,
    e.g. the ``lm`` study's GPU profile (its own pipeline file, ``pipelines/lm/gpu/dvc.yaml``); the DVC stages read
    the arms their plan builds (``negotiation.pipeline.analysis_scope``).
    """
    if arms is None:
        return study
    chosen = set(arms)
    unknown = sorted(chosen - set(study.arms))
    if unknown or not chosen:
        raise AnalysisError(f"protocol/{study.name}/arms.yaml", "arms",
                            f"scope {sorted(chosen)}: {unknown or 'no arm'} not among the study's arms")
    return study.restricted(chosen)


def load_tables(results_dir: Path, arms, *, turns: bool = True) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Episode (and turn) tables of every arm that has them under ``evaluate/<arm>/``."""
    layout = ResultsLayout(Path(results_dir))
    episodes, turn_tables = {}, {}
    for arm in arms:
        path = layout.episodes(arm)
        if path.exists():
            episodes[arm] = pd.read_parquet(path)
            turn_path = layout.turns(arm)
            if turns and turn_path.exists():
                turn_tables[arm] = pd.read_parquet(turn_path)
    if not episodes:
        raise AnalysisError(str(layout.dir / "evaluate"), "<arm>/episodes.parquet", "no arm has an episode table")
    return episodes, turn_tables


def table_hashes(results_dir: Path, arms) -> dict[str, str]:
    """SHA-256 of every arm's episode table that exists."""
    layout = ResultsLayout(Path(results_dir))
    return {arm: hashlib.sha256(layout.episodes(arm).read_bytes()).hexdigest()
            for arm in arms if layout.episodes(arm).exists()}


def validate_results(study: Study, results_dir: Path) -> ValidationReport:
    """Validate every arm's table; write ``validate/report.json`` and Data Docs."""
    out = ResultsLayout(Path(results_dir)).validate
    episodes, _ = load_tables(results_dir, study.arms, turns=False)
    settings = validation_settings(study.protocol, list(study.arms))
    report = validate_episodes(episodes, settings, docs_dir=out / "docs", study=study.name)
    report = report.model_copy(update={"tables": table_hashes(results_dir, study.arms)})
    out.mkdir(parents=True, exist_ok=True)
    ResultsLayout(Path(results_dir)).validation_report.write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return report


def require_validated(study: Study, results_dir: Path) -> ValidationReport:
    """The stored validation report, re-validating when there is none or a table changed
    since; raise ValidationFailed naming the first failing expectation and its rows."""
    path = ResultsLayout(Path(results_dir)).validation_report
    report = ValidationReport.model_validate(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None
    if report is None or report.tables != table_hashes(results_dir, study.arms):
        report = validate_results(study, results_dir)
    require_valid(report)
    return report


def analyze_results(study: Study, results_dir: Path, registry: RegistryInputs, *, seed: int,
                    resamples: int | None = None) -> AnalysisResult:
    """Run the analysis on validated tables and write ``analyze/`` (``registry``: the sign-offs
    the hand-read guard reads)."""
    require_validated(study, results_dir)
    episodes, turns = load_tables(results_dir, study.arms)
    settings = bootstrap_settings(study.protocol, seed=seed, resamples=resamples)
    result = run_analysis(episodes, study.protocol, study.arms, settings, turns=turns or None,
                          signoffs=registry.signoffs, rules=study.guard_rules,
                          prices=study.prices)
    write_analysis(result, ResultsLayout(Path(results_dir)).analyze, study.name)
    return result


def write_report(result: AnalysisResult, study: Study, results_dir: Path, out_dir: Path, validation: Any,
                 registry: RegistryInputs, *, seed: int, viewer_episodes: int = 2000) -> dict[str, Path]:
    """``report.html``, ``report.md``, ``figures/*.png`` and the transcript viewer the report's arm
    names link to (``transcripts.html``: ``viewer_results`` over the study's arms, a sample seeded
    by ``seed`` above ``viewer_episodes``) under ``out_dir``: the one composition that ``nego
    report`` and the DVC report stage share."""
    from negotiation.analysis._report import build_report  # matplotlib: only the report draws

    out = Path(out_dir)
    paths = build_report(result, study, out, validation, registry)
    paths["transcripts.html"] = viewer_results(study, Path(results_dir), out / "transcripts.html",
                                               max_episodes=viewer_episodes, seed=seed)
    return paths


def report_results(study: Study, results_dir: Path, out_dir: Path, registry: RegistryInputs, *, seed: int,
                   resamples: int | None = None, viewer_episodes: int = 2000) -> dict[str, Path]:
    """Validation gate, analysis (rewriting ``analyze/``) and ``write_report`` under ``out_dir``
    (``registry``: what it reads from the registry, ``negotiation.pipeline.registry_inputs``).

    The analysis is deterministic in ``seed``, so re-running it here reproduces the
    analyze stage's numbers exactly while keeping everything the report draws in memory.
    """
    validation = require_validated(study, results_dir)
    result = analyze_results(study, results_dir, registry, seed=seed, resamples=resamples)
    return write_report(result, study, results_dir, out_dir, validation, registry, seed=seed,
                        viewer_episodes=viewer_episodes)


def viewer_results(study: Study, results_dir: Path, out_path: Path, *, arms=None, max_episodes: int,
                   seed: int) -> Path:
    """The transcript viewer over the chosen arms; a seeded sample when there are too many episodes."""
    import numpy as np

    from negotiation.analysis._viewer import write_viewer

    chosen = list(arms) if arms else list(study.arms)
    episodes, turns = load_tables(results_dir, chosen)
    if not turns:
        raise AnalysisError(str(results_dir), "evaluate/<arm>/turns.parquet", "no turn tables to show")
    table = pd.concat(list(episodes.values()), ignore_index=True)
    note = f"{len(table)} episodes."
    if len(table) > max_episodes:
        # Sample whole scenarios (domain, seed, buyer) so that every shown episode keeps its pairs.
        scenarios = table[["domain", "seed", "buyer"]].drop_duplicates().sort_values(["domain", "seed", "buyer"])
        per_scenario = len(table) / len(scenarios)
        size = max(1, min(len(scenarios), int(max_episodes // per_scenario)))
        keep = np.sort(np.random.default_rng(seed).choice(len(scenarios), size=size, replace=False))
        table = table.merge(scenarios.iloc[keep], on=["domain", "seed", "buyer"])
        note = (f"A seeded sample (seed {seed}) of {size} of {len(scenarios)} scenarios: {len(table)} of "
                f"{sum(len(e) for e in episodes.values())} episodes.")
    return write_viewer(out_path, table, pd.concat(list(turns.values()), ignore_index=True),
                        title=f"Transcripts: {study.name}", note=note)


def packet_results(study: Study, results_dir: Path, out_dir: Path, *, seed: int) -> dict[str, Path]:
    """The seeded hand-read packet: ``packet.csv`` and a viewer over exactly those episodes."""
    import numpy as np

    from negotiation.analysis._packet import hand_read_packet
    from negotiation.analysis._viewer import write_viewer

    episodes, turns = load_tables(results_dir, study.arms)
    per_family = study.protocol.guards.hand_read.transcripts_per_domain_family
    packet = hand_read_packet(episodes, study.arms, tuple(study.protocol.domains.held_out), per_family,
                              np.random.default_rng(seed))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    packet.to_csv(out / "packet.csv", index=False)
    key = ["arm", "domain", "seed", "buyer"]
    table = pd.concat(list(episodes.values()), ignore_index=True).merge(packet[key], on=key)
    all_turns = pd.concat(list(turns.values()), ignore_index=True) if turns else pd.DataFrame()
    viewer = write_viewer(out / "packet.html", table, all_turns.merge(packet[key], on=key),
                          title=f"Hand-read packet: {study.name}",
                          note=f"{per_family} transcripts per trained arm per domain family, seed {seed}. "
                               f"Record a verdict with: nego signoff ARM --reader NAME --verdict pass|fail ...")
    return {"packet.csv": out / "packet.csv", "packet.html": viewer}
