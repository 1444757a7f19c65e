"""``nego learn-task TASK``: run one task of the token trainer's learning ladder (docs/training.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

__all__ = ["learn_task"]


def learn_task(
    task: str = typer.Argument(..., help="Task of protocol/<study>/learning.yaml, e.g. format, opening."),
    study: str = typer.Option("lm", "--study", help="Study whose learning ladder and protocol are read."),
    device: str = typer.Option("cpu", "--device", help="cpu runs the task's cpu budget; cuda its gpu budget."),
    size: Optional[str] = typer.Option(None, "--size", help="Size of the budget; default its first."),
    out: Path = typer.Option(Path("outputs/learning"), "--out", help="Folder of the tokenizer, bases and runs."),
    threads: int = typer.Option(2, "--threads", help="torch CPU threads."),
    resume: bool = typer.Option(False, "--resume", help="Continue runs an earlier call left partial; keep finished ones."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root holding protocol/."),
) -> None:
    """Run one learning-ladder task end to end; print its verdict; exit 1 when it fails."""
    import json

    from negotiation.study import load_study
    from negotiation.learning import run_learning_task
    from negotiation.training.lm import LmRuntime

    loaded = load_study(study, root)
    ladder = loaded.learning
    machine = "cpu" if device == "cpu" else "gpu"
    runtime = LmRuntime(device=device, dtype="float32" if machine == "cpu" else "bfloat16", threads=threads)
    verdict = run_learning_task(loaded.protocol, ladder, task, machine=machine, out=out, size=size, runtime=runtime,
                                resume=resume)
    typer.echo(json.dumps({k: v for k, v in verdict.items() if k not in ("criteria", "paired")}, sort_keys=True))
    for c, declared in zip(verdict["criteria"], ladder.tasks[task].criteria):
        against = " minus the frozen control" if declared.against == "frozen_control" else ""
        typer.echo(f"{c['metric']}{against}: first {c['first_mean']:.4f} -> last {c['last_mean']:.4f} (change "
                   f"{c['change']:+.4f}, needs {c['direction']} >= {c['min_change']}): "
                   f"{'pass' if c['passed'] else 'FAIL'}")
    if not verdict["passed"]:
        raise typer.Exit(1)
