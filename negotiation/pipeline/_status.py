"""``nego status STUDY``: per arm what is trained, selected, gated and evaluated, and the
study's validation, audit and report state, read from the results folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from negotiation.pipeline._plan import build_plan
from negotiation.registry import AuditReport
from negotiation.study import ResultsLayout, Study, as_study


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _trained(root: Path, arm: dict[str, Any]) -> str:
    if arm["kind"] != "trained":
        return "n/a" if arm["kind"] == "reference" else ("yes" if (root / arm["source"]).exists() else "no")
    steps = sorted(int(p.name[5:]) for p in (root / arm["source"]).glob("step_*") if p.name[5:].isdigit())
    return f"steps {steps[0]}..{steps[-1]}" if steps else "no"


def _evaluated(layout: ResultsLayout, arm: str) -> str:
    metrics = _read(layout.metrics(arm))
    if metrics is None:
        return "no"
    return f"{metrics['episodes']} episodes, {metrics['error_rows']} error rows, S={metrics.get('S', float('nan')):.3f}"


READ_KEYS = ("run", "read_step", "combined_step", "parent_run", "branch_step")
"""Plan keys stating where a trained arm is read (``nego status --json`` shows them per arm)."""


def _reads(arm: dict[str, Any]) -> str:
    if arm["kind"] != "trained":
        return "n/a"
    branch = f", branched from {arm['parent_run']} at {arm['branch_step']}" if arm["parent_run"] else ""
    return f"{arm['run']} step {arm['read_step']} (combined {arm['combined_step']}{branch})"


def arm_reads(study: Study | str, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Per trained arm, the plan's run, own read step, combined step, parent run and branch step."""
    loaded = as_study(study, root)
    plan = build_plan(loaded, profile=loaded.profile)["plan"]
    return {name: {key: arm[key] for key in READ_KEYS} for name, arm in plan["arms"].items() if arm["kind"] == "trained"}


def arm_rows(study: Study | str, root: Path | None = None) -> list[dict[str, str]]:
    """One row per arm the plan of the study's profile builds (``Study.profile``)."""
    loaded = as_study(study, root)
    plan = build_plan(loaded, profile=loaded.profile)["plan"]
    layout = loaded.layout
    rows = []
    for name, arm in plan["arms"].items():
        selection = _read(layout.selection(name))
        pilot = _read(layout.pilot(name))
        rows.append({
            "arm": name, "kind": arm["kind"], "frozen": "yes" if arm["frozen"] else "added", "reads": _reads(arm),
            "trained": _trained(loaded.root, arm),
            "selected": (f"step {selection['step']}" + (" (substitution)" if selection["substitution"] else "")
                         if selection else ("yes" if layout.seller(name).exists() else "no")),
            "gated": ("passed" if pilot["passed"] else "FAILED") if pilot else "no",
            "evaluated": _evaluated(layout, name),
        })
    return rows


def study_state(study: Study | str, root: Path | None = None) -> dict[str, Any]:
    """Validation, audit and report state of the study."""
    loaded = as_study(study, root)
    layout = loaded.layout
    validation = _read(layout.validation_report)
    audit = _read(layout.audit)
    report, transcripts = layout.report / "report.html", layout.report / "transcripts.html"
    return {
        "validation": "not run" if validation is None else ("passed" if validation.get("success") else "FAILED"),
        # the stage writes the report's fields; whether it passed is the report's own rule (no stored key)
        "audit": "not run" if audit is None else ("passed" if AuditReport.model_validate(audit).passed else "FAILED"),
        "report": str(report.relative_to(loaded.root)) if report.exists() else "not built",
        "transcripts": str(transcripts.relative_to(loaded.root)) if transcripts.exists() else "not built",
    }
