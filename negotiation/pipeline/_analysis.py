"""``validate``, ``analyze``, ``report`` and ``audit``: the study-level stages.

``validate`` always writes its report and Data Docs (a failed validation is a record too);
``analyze`` and ``report`` refuse to run on tables that did not validate, naming the failing
expectation and rows. The report reruns the (seeded, deterministic) analysis in memory rather
than rewriting ``analyze/``, so each folder has exactly one writer. One MLflow analysis run per
report holds the report, the contrasts and the validation docs.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from negotiation.analysis import (
    AnalysisError, RegistryInputs, Table, bootstrap_settings, load_tables, panel_bases, panel_tables, require_validated, run_analysis,
    scoped, validate_results, write_analysis, write_report,
)
from negotiation.errors import NegotiationError
from negotiation.pipeline._plan import planned_arms
from negotiation.study import ResultsLayout, Study, as_study
from negotiation.registry import Registry, run_audit
from negotiation.tracking import MlflowTracker, experiment_name, git_commit


def analysis_scope(study: Study | str, arms: Sequence[str] | None, results_dir: Path) -> Study:
    """The study with the arms validate, analyze and report read (stages and ``nego`` alike).

    ``arms`` (names or fnmatch patterns, e.g. ``lm_m_*``) scopes to a part built apart
    (``scoped``); a pattern matching no arm is an error naming it. Without ``arms``: every arm the
    plan of the profile whose results ``results_dir`` holds builds (``Study.results_profile``):
    the CPU profile's in ``outputs/<study>``, the GPU profile's and the reference sellers in
    ``outputs/<study>-gpu``. Without that rule a fresh ``dvc --cd pipelines/lm repro`` stopped
    at validate, waiting for tables no stage of it writes."""
    loaded = as_study(study)
    if arms is None:
        chosen = planned_arms(loaded, Path(results_dir)) if loaded.gpu_profile_arms() else None
    else:
        chosen = []
        for pattern in arms:
            matched = [arm for arm in loaded.arms if fnmatch.fnmatchcase(arm, pattern)]
            if not matched:
                raise AnalysisError(f"protocol/{loaded.name}/arms.yaml", "arms", f"{pattern!r} names no arm of the study")
            chosen += [arm for arm in matched if arm not in chosen]
    return scoped(loaded, chosen)


def deviation_table(registry: Registry) -> Table:
    """The report's deviation log: every active deviation, its date, category and scope."""
    t = Table("deviations", "Deviation log (registry): every departure from the frozen protocol.",
              ["Id", "Date", "Title", "Category", "Applies to"])
    for entry in registry.deviations.active():
        scope = "all arms" if entry.all_arms else ", ".join([*entry.arms, *(c.arm for c in entry.cells)]) or "—"
        t.rows.append([str(entry.id), str(entry.date), entry.title, entry.category, scope])
    return t


def compliance_table(study: Study, results_dir: Path) -> Table:
    """The report's compliance table: each audit check, its status and evidence (an audit that
    cannot run is one ``error`` row naming why)."""
    t = Table("audit", "Protocol compliance (nego audit): each check, its status and its evidence.",
              ["Check", "Status", "Evidence", "Deviations"])
    try:
        report = run_audit(study, results_dir=results_dir)
    except NegotiationError as exc:
        t.rows.append(["audit", "error", str(exc), "—"])
        return t
    for finding in report.findings:
        t.rows.append([finding.check, finding.status, finding.evidence,
                       ", ".join(map(str, finding.deviations)) or "—"])
    return t


def registry_inputs(study: Study, results_dir: Path | None = None, *, seed: int = 0,
                    resamples: int | None = None) -> RegistryInputs:
    """What the analysis reads from ``registry/<study>/``: the sign-offs, each arm's served
    protocol (``effective_protocol``) and, with ``results_dir``, the report's tables of the buyer
    panel (``seed``, ``resamples``: its bootstrap), the deviation log and the compliance table."""
    registry = study.registry
    served = {arm: study.effective_protocol(arm) for arm in study.arms}
    appendix = () if results_dir is None else (
        *panel_report_tables(study, Path(results_dir), seed=seed, resamples=resamples),
        deviation_table(registry), compliance_table(study, Path(results_dir)))
    return RegistryInputs(signoffs=registry.signoffs, served=served, appendix=appendix)


def panel_report_tables(study: Study, results_dir: Path, *, seed: int, resamples: int | None = None) -> tuple[Table, ...]:
    """The report's panel tables from ``panel/<arm>/`` (``panel_tables``); none for a study without
    a panel, and one empty table saying so when the panel stage has not run on ``results_dir``."""
    panel = study.panel
    if panel is None:
        return ()
    layout = ResultsLayout(results_dir)
    paths = {arm: layout.panel_episodes(arm) for arm in planned_arms(study, results_dir)}
    frames = {arm: pd.read_parquet(path) for arm, path in paths.items() if path.is_file()}
    if not frames:
        return (Table("panel", f"Exploratory buyer panel: no tables under {layout.panel_root} (the panel stage "
                               f"has not run on these results). {panel.caveat}", ["Arm"]),)
    settings = bootstrap_settings(study.protocol, seed=seed, resamples=resamples)
    return panel_tables(frames, panel_bases(study.arms), list(panel.buyers), panel.description, panel.caveat,
                        settings, np.random.default_rng(seed))


def run_validate(study: Study | str, results_dir: Path, *, arms: list[str] | None = None) -> dict[str, Any]:
    """Validate every planned arm's episode table (``arms``: those arms only, see ``analysis_scope``);
    the report is written whether or not it passes."""
    report = validate_results(analysis_scope(study, arms, results_dir), Path(results_dir))
    return json.loads(report.model_dump_json())


def _analysis(study: Study | str, results_dir: Path, seed: int, resamples: int | None,
              arms: list[str] | None = None) -> tuple[Any, Any, Any]:
    loaded = analysis_scope(study, arms, results_dir)
    validation = require_validated(loaded, Path(results_dir))
    episodes, turns = load_tables(Path(results_dir), loaded.arms)
    settings = bootstrap_settings(loaded.protocol, seed=seed, resamples=resamples)
    result = run_analysis(episodes, loaded.protocol, loaded.arms, settings, turns=turns or None,
                          signoffs=loaded.signoffs, rules=loaded.guard_rules, prices=loaded.prices)
    return loaded, validation, result


def run_analyze(study: Study | str, results_dir: Path, out_dir: Path, *, seed: int, resamples: int | None = None,
                arms: list[str] | None = None) -> dict[str, Any]:
    """Metrics, contrasts (Holm on the primary family), frontier columns and guards into ``out_dir``."""
    loaded, _, result = _analysis(study, results_dir, seed, resamples, arms)
    write_analysis(result, Path(out_dir), loaded.name)
    primary = [c for c in result.contrasts if c.spec.primary]
    summary = {"contrasts": len(result.contrasts), "primary": len(primary),
               "primary_rejected": sum(bool(c.holm_rejected) for c in primary),
               "guards_failed": sum(1 for g in result.guards if g.status == "fail"),
               "guards_pending": sum(1 for g in result.guards if g.status == "pending")}
    (Path(out_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def run_report(study: Study | str, results_dir: Path, out_dir: Path, *, seed: int, resamples: int | None = None,
               viewer_episodes: int = 2000, track: bool = True, arms: list[str] | None = None) -> dict[str, str]:
    """The report (HTML, Markdown, figures) and the transcript viewer under ``out_dir``."""
    context, validation, result = _analysis(study, results_dir, seed, resamples, arms)
    out = Path(out_dir)
    inputs = registry_inputs(context, Path(results_dir), seed=seed, resamples=resamples)
    paths = write_report(result, context, Path(results_dir), out, validation, inputs,
                         seed=seed, viewer_episodes=viewer_episodes)
    if track:
        _log_analysis_run(context, Path(results_dir), out)
    return {name: str(path) for name, path in paths.items()}


def _log_analysis_run(study: Study, results_dir: Path, report_dir: Path) -> None:
    tags = {"study": study.name, "phase": "analysis", "dvc_stage": "report", "git_commit": git_commit(),
            "protocol_hash": study.lock_hash}
    tracker = MlflowTracker(experiment_name(study.name), "analysis", {}, tags)
    layout = ResultsLayout(results_dir)
    summary = layout.summary
    if summary.exists():
        values = json.loads(summary.read_text(encoding="utf-8"))
        tracker.log_step(0, {f"analysis/{k}": float(v) for k, v in values.items()})
    tracker.log_artifact(report_dir, "report")
    for extra in (layout.analyze, layout.validate):
        if extra.exists():
            tracker.log_artifact(extra, extra.name)
    tracker.finish()


def run_audit_stage(study: Study | str, results_dir: Path, out_path: Path) -> bool:
    """Run the audit over the results; write its JSON; return whether it passed."""
    report = run_audit(study, results_dir=Path(results_dir))
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return bool(report.passed)
