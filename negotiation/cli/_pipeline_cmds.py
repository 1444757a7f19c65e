"""``nego pipeline plan``, ``nego pipeline keep`` and ``nego status``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from negotiation.cli._output import print_json
from negotiation.pipeline import arm_reads, arm_rows, stale_code_deps, study_state, write_plan

pipeline_app = typer.Typer(help="The DVC pipeline's derived files (plan and per-study pipeline) and kept results.",
                           no_args_is_help=True)


@pipeline_app.command("plan")
def plan_command(
    study: str = typer.Argument(..., help="Study under protocol/, e.g. demo or paper."),
    check: bool = typer.Option(False, "--check", help="Only compare; exit 1 when a file is stale."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object: each file, whether it is current, "
                                                       "and (--check) each stale stage's missing/extra dep."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root."),
) -> None:
    """Write pipelines/plans/STUDY.yaml from protocol/ and registry/, the study file (dvc.yaml, or
    pipelines/STUDY/dvc.yaml) and per arm pipelines/STUDY/arms/ARM/dvc.yaml and params.yaml, each
    stage's code deps derived from its script's imports; with --check, fail when one is not current
    (naming each stage's missing/extra dep) or an arm folder holds no planned arm."""
    from negotiation.study import load_study

    loaded = load_study(study, root)
    files = [(str(path), current) for path, current in write_plan(loaded, check=check)]
    stale = [path for path, current in files if not current]
    if as_json:
        problems = stale_code_deps(loaded) if stale and check else []
        # current: the file holds what was derived (without --check: after writing it, so always)
        print_json({"study": study, "check": check, "files": [{"path": p, "current": c} for p, c in files],
                    "stale": stale, "problems": problems})
        if check and stale:
            raise typer.Exit(1)
        return
    _print_files(files, check)
    if stale:
        for problem in stale_code_deps(loaded):
            typer.echo(problem, err=True)
        typer.echo(f"run `nego pipeline plan {study}` and commit the result", err=True)
        raise typer.Exit(1)


@pipeline_app.command("keep")
def keep_command(
    results: Path = typer.Argument(..., help="A study's results folder, e.g. outputs/lm-gpu."),
    out: Path = typer.Argument(..., help="New folder for the kept files, e.g. docs/results/<name>/tables."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object: the files copied and their bytes."),
) -> None:
    """Copy RESULTS' raw tables and records (episode and turn tables; seller, selection, pilot,
    sampling and metrics records; training curves and step records) to OUT, without weights,
    stores or derived stages, small enough to commit; validate, analyze, report and audit take
    OUT as --results."""
    from negotiation.pipeline import keep_results

    kept = keep_results(results, out)
    if as_json:
        print_json({"results": str(results), "out": str(out), "bytes": kept.bytes,
                    "files": [str(path) for path in kept.files]})
        return
    typer.echo(f"kept {len(kept.files)} files ({kept.bytes / 1e6:.2f} MB) from {results} in {out}")


def _print_files(files: list[tuple[str, bool]], check: bool) -> None:
    """One line per study-level file; arm folders' files summed per ``arms/`` folder unless stale."""
    arms: dict[str, list[bool]] = {}
    for path, current in files:
        parts = Path(path).parts
        if "arms" in parts and not (check and not current):
            arms.setdefault(str(Path(*parts[:parts.index("arms") + 1])), []).append(current)
            continue
        orphan = Path(path).is_dir()
        state = ("ORPHAN (no planned arm)" if orphan else "STALE") if not current else "up to date"
        typer.echo(f"{path}: {state}" if check else f"wrote {path}")
    for folder, states in arms.items():
        typer.echo(f"{folder}: {len(states)} arm files {'up to date' if check else 'written'}")


def status_command(
    study: str = typer.Argument("demo", help="Study under protocol/."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root."),
    profile: str = typer.Option("cpu", "--profile", help="Hardware profile whose arms and results folder to show "
                                "(cpu or gpu: the lm study's GPU profile, outputs/lm-gpu)."),
) -> None:
    """Per arm what is trained, selected, gated and evaluated; validation, audit and report."""
    from negotiation.study import load_study

    loaded = load_study(study, root, profile=profile)
    rows, state = arm_rows(loaded), study_state(loaded)
    if as_json:
        reads = arm_reads(loaded)  # the plan's read steps and branches, as numbers
        arms = [{**row, **reads.get(row["arm"], {})} for row in rows]
        print_json({"study": study, "arms": arms, **state})
        return
    console = Console()
    _print_rows(console, f"study {study}", rows)
    for key, value in state.items():
        console.print(f"{key}: {value}")


def _print_rows(console: Console, title: str, rows: list[dict[str, str]]) -> None:
    """The rows as a table when it fits the terminal unwrapped; else one block per arm (its name
    whole on the first line, the other fields wrapped below), so no name is ever cut or folded."""
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in rows[0] if rows else []:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*row.values())
    if console.measure(table, options=console.options.update_width(10_000)).maximum <= console.width:
        console.print(table)
        return
    console.print(title, markup=False, highlight=False)
    for row in rows:
        first, *rest = row.items()
        console.print(f"{first[1]}", markup=False, highlight=False, overflow="ignore", crop=False)
        console.print(Padding(Text("; ".join(f"{k}: {v}" for k, v in rest)), (0, 0, 0, 2)))
