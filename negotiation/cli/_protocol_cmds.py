"""``nego protocol freeze|verify STUDY``: write and check the lock of a study's frozen files."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from negotiation.cli._app import EXIT_FAILED, one_line
from negotiation.cli._config import require_study
from negotiation.study import LockError, default_root, freeze, verify

__all__ = ["exit_with", "protocol_app", "root_option"]

protocol_app = typer.Typer(
    help="Freeze and verify a study's protocol: protocol/<study>/{protocol,arms}.yaml and its domains.",
    no_args_is_help=True,
    add_completion=False,
)


def root_option() -> Optional[Path]:
    """The ``--root`` option shared by the protocol and registry commands."""
    return typer.Option(
        None, "--root", help="Repository root holding protocol/ and registry/ (default: this checkout).",
        file_okay=False,
    )


def exit_with(message: str, code: int) -> typer.Exit:
    """Print ``message`` as the one ``error:`` line (several problems joined by ``; ``) to stderr
    and return the exit to raise."""
    typer.echo(f"error: {one_line(message)}", err=True)
    return typer.Exit(code)


@protocol_app.command("freeze")
def freeze_command(
    study: str = typer.Argument(..., help="Study name, e.g. demo or paper."),
    root: Optional[Path] = root_option(),
) -> None:
    """Validate the study and write protocol/<study>/lock.yaml with the hash of every frozen file."""
    require_study(study, root)
    lock = freeze(study, root or default_root())  # a ConfigError is bad input: one line, exit 2
    typer.echo(f"froze {study}: {len(lock.files)} files, protocol hash {lock.protocol_hash}")


@protocol_app.command("verify")
def verify_command(
    study: str = typer.Argument(..., help="Study name, e.g. demo or paper."),
    root: Optional[Path] = root_option(),
) -> None:
    """Recompute the hashes of the study's frozen files and compare them with its lock."""
    require_study(study, root)
    try:
        lock = verify(study, root or default_root())
    except LockError as exc:  # the check ran and found a difference; other ConfigErrors are bad input
        raise exit_with(str(exc), EXIT_FAILED) from None
    typer.echo(f"{study}: {len(lock.files)} frozen files match the lock; protocol hash {lock.protocol_hash}")
