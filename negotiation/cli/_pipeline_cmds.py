"""``nego pipeline plan`` and ``nego status``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from negotiation.pipeline import arm_reads, arm_rows, stale_code_deps, study_state, write_plan

pipeline_app = typer.Typer(help="The DVC pipeline's derived files (plan and per-study pipeline).",
                           no_args_is_help=True)


@pipeline_app.command("plan")
def plan_command(
    study: str = typer.Argument(..., help="Study under protocol/, e.g. demo or paper."),
    check: bool = typer.Option(False, "--check", help="Only compare; exit 1 when a file is stale."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root."),
) -> None:
    """Write pipelines/plans/STUDY.yaml from protocol/ and registry/, and the study's pipeline file
    (dvc.yaml, or pipelines/STUDY/dvc.yaml) with each stage's code deps derived from its script's
    imports; with --check, fail when they are not current, naming each stage's missing/extra dep."""
    stale = []
    for path, current in write_plan(study, root, check=check):
        typer.echo(f"{path}: {'up to date' if current else 'STALE'}" if check else f"wrote {path}")
        if not current:
            stale.append(path)
    if stale:
        for problem in stale_code_deps(study, root):
            typer.echo(problem, err=True)
        typer.echo(f"run `nego pipeline plan {study}` and commit the result", err=True)
        raise typer.Exit(1)


def status_command(
    study: str = typer.Argument("demo", help="Study under protocol/."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root."),
) -> None:
    """Per arm what is trained, selected, gated and evaluated; validation, audit and report."""
    rows, state = arm_rows(study, root), study_state(study, root)
    if as_json:
        reads = arm_reads(study, root)  # the plan's read steps and branches, as numbers
        arms = [{**row, **reads.get(row["arm"], {})} for row in rows]
        typer.echo(json.dumps({"study": study, "arms": arms, **state}, indent=1))
        return
    table = Table(title=f"study {study}")
    for column in rows[0] if rows else []:
        table.add_column(column)
    for row in rows:
        table.add_row(*row.values())
    console = Console()
    console.print(table)
    for key, value in state.items():
        console.print(f"{key}: {value}")
