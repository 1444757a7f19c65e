"""``nego audit STUDY`` and ``nego deviation new STUDY``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from negotiation.cli._app import EXIT_FAILED, EXIT_INPUT
from negotiation.cli._config import require_study
from negotiation.cli._output import PROFILE_OPTION
from negotiation.cli._protocol_cmds import exit_with, root_option
from negotiation.errors import ConfigError
from negotiation.names import check_name
from negotiation.study import ResultsLayout, default_root, load_study
from negotiation.protocol import check_profile
from negotiation.registry import (
    CATEGORIES, CHECKS, INDEX_FILE, AuditReport, appended_only, arm_fields, key_values, new_deviation, parse_cell,
    run_audit,
)

__all__ = ["audit_command", "deviation_app", "print_report"]

_STYLE = {"pass": "green", "covered": "yellow", "fail": "bold red", "pending": "cyan", "skipped": "dim"}


def print_report(report: AuditReport, console: Console) -> None:
    """The compliance table: check, status, evidence, covering deviation."""
    table = Table(title=f"Protocol compliance: {report.study}"
                        + (" (declared state: no results)" if report.declared_only else ""))
    for column in ("check", "status", "evidence", "deviation"):
        table.add_column(column, overflow="fold")
    for f in report.findings:
        ids = ", ".join(f"{i:04d}" for i in f.deviations)
        # Evidence is data (file:key: reason): as Text, rich reads no markup ("[x]") or emoji (":id:") in it.
        table.add_row(Text(f.check), Text(f.status, style=_STYLE[f.status]), Text(f.evidence), ids)
    console.print(table)
    failed = sum(f.status == "fail" for f in report.findings)
    verdict = "[green]PASS[/]" if report.passed else f"[bold red]FAIL[/]: {failed} uncovered departures or unreadable inputs"
    console.print(f"{report.study}: {verdict}")


def audit_command(
    study: str = typer.Argument(..., help="Study name, e.g. demo or paper."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON instead of a table."),
    results: Optional[Path] = typer.Option(
        None, "--results", help="Results directory (default: outputs/<study> under the root).", file_okay=False
    ),
    root: Optional[Path] = root_option(),
    profile: Optional[str] = PROFILE_OPTION,
) -> None:
    require_study(study, root)
    if profile is not None:
        check_profile(profile)
    if results is not None:
        _require_results(results)
    report = run_audit(study, root=root or default_root(), results_dir=results, profile=profile)
    if json_output:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report, Console(width=max(100, Console().width)))
    if not report.passed:
        raise typer.Exit(EXIT_FAILED)


def _require_results(results: Path) -> None:
    """An explicit ``--results`` must hold results: a typo or an empty folder would otherwise audit the
    declared state alone and PASS, as if the results had been checked."""
    if not results.is_dir():
        raise ConfigError(f"--results:{results}: " + ("not a folder" if results.exists() else "no such folder"))
    if not ResultsLayout(results).exists():
        raise ConfigError(f"--results:{results}: holds no results (none of select/, pilot/, evaluate/, analyze/); "
                          "leave --results out to audit the declared state")


audit_command.__doc__ = (
    "Audit a study against its frozen protocol; exit 1 on any uncovered departure.\n\n"
    "Reads protocol/<study>/, registry/<study>/ and, when present, the results directory. "
    "Checks, in order:\n\n" + "\n\n".join(f"{c.name}: {c.description}" for c in CHECKS)
)

deviation_app = typer.Typer(help="Append to a study's deviation log (registry/<study>/deviations/).",
                            no_args_is_help=True, add_completion=False)


@deviation_app.command("new")
def new_command(
    study: str = typer.Argument(..., help="Study name, e.g. demo or paper."),
    category: str = typer.Option(..., "--category", help=f"One of: {', '.join(CATEGORIES)}."),
    title: str = typer.Option(..., "--title", help="One-line title; also the file name's slug."),
    arm: List[str] = typer.Option([], "--arm", help="Arm covered in full (repeatable)."),
    cell: List[str] = typer.Option([], "--cell", help="Part of an arm, arm[:buyer[:domain]] (repeatable)."),
    all_arms: bool = typer.Option(False, "--all-arms", help="The departure applies to every arm."),
    what: str = typer.Option(..., "--what", prompt="What changed", help="What was done differently."),
    why: str = typer.Option(..., "--why", prompt="Why", help="Why."),
    impact: str = typer.Option(..., "--impact", prompt="Expected impact", help="Expected effect on results."),
    supersedes: Optional[int] = typer.Option(None, "--supersedes", help="Id of the entry this one amends."),
    source: Optional[str] = typer.Option(None, "--source", help="Where the departure is reported."),
    add_arm: Optional[str] = typer.Option(None, "--add-arm", help="Also add this new arm to registry/<study>/arms.yaml, "
                                          "citing the entry (category arm_added; docs/add-an-arm.md)."),
    like: Optional[str] = typer.Option(None, "--like", help="With --add-arm: start from this arm's fields."),
    setting: List[str] = typer.Option([], "--set", help="With --add-arm: an arm field, key=value (YAML value; "
                                      "repeatable), e.g. --set lr_multiple=5 --set run=w64_lr5x."),
    value: List[str] = typer.Option([], "--value", help="A frozen protocol key the covered arms ran (or train) with "
                                    "instead, key=value (YAML value; repeatable), e.g. "
                                    "--value gpu_training.baseline=group_mean."),
    root: Optional[Path] = root_option(),
) -> None:
    """Scaffold registry/<study>/deviations/NNNN-slug.yaml with the next id and today's date; with
    --add-arm, also the new arm's entry in registry/<study>/arms.yaml."""
    if category not in CATEGORIES:
        raise exit_with(f"--category:{category!r}: not one of {', '.join(CATEGORIES)}", EXIT_INPUT)
    if add_arm is None and (like or setting):
        raise exit_with(f"--{'like' if like else 'set'}: only with --add-arm NAME", EXIT_INPUT)
    try:
        loaded = load_study(study, root)
        fields = arm_fields(loaded, like, setting) if add_arm is not None else None
        values = key_values("--value", value, "gpu_training.baseline=group_mean")
        path = new_deviation(
            loaded, category=category, title=title, what_changed=what, why=why, expected_impact=impact,
            arms=arm, cells=[parse_cell(c) for c in cell], all_arms=all_arms, supersedes=supersedes,
            source=source, root=root, add_arm=add_arm, arm=fields, values=values,
        )
    except ConfigError as exc:
        raise exit_with(str(exc), EXIT_INPUT) from None
    typer.echo(f"wrote {path}")
    if add_arm is not None:
        typer.echo(f"added arm {add_arm} to registry/{study}/arms.yaml; next: `nego pipeline plan {study}`")


@deviation_app.command("check-index")
def check_index_command(
    study: str = typer.Argument(..., help="Study name, e.g. demo or paper."),
    against: str = typer.Option(..., "--against", help="Git revision whose index must be kept (the target branch)."),
    root: Optional[Path] = root_option(),
) -> None:
    """Exit 1 when registry/<study>/deviations/index.yaml drops or changes an entry REV's index has."""
    root = Path(root or default_root())
    rel = f"registry/{check_name('study', study)}/deviations/{INDEX_FILE}"
    shown = subprocess.run(["git", "-C", str(root), "show", f"{against}:{rel}"], capture_output=True, text=True)
    if shown.returncode != 0:
        if "does not exist" in shown.stderr or "exists on disk, but not in" in shown.stderr:
            typer.echo(f"{rel}: absent at {against}; nothing to keep")
            return
        raise exit_with(f"--against:{against}: git show failed: {' '.join(shown.stderr.split())}", EXIT_INPUT)
    problems = appended_only(shown.stdout, root / rel.rsplit("/", 1)[0], root=root)
    if problems:
        raise exit_with("\n".join(problems), EXIT_FAILED)
    typer.echo(f"{rel}: every entry of {against} kept")
