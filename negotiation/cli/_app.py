"""The ``nego`` typer app and its error handler.

Command groups live in their own modules and register themselves on ``app`` (see
``negotiation.cli.__init__``); sub-apps of other packages are mounted there with
``app.add_typer``. Errors a user can fix (``NegotiationError``) print as one
``file/arg:key: reason`` line on stderr and exit with status 2, never as a traceback.
"""

from __future__ import annotations

from typing import Any

import click
import typer
from typer.core import TyperGroup

from negotiation.errors import NegotiationError

__all__ = ["EXIT_INPUT", "app", "main"]

EXIT_INPUT = 2
"""Exit status for input that cannot be used: bad JSON, unknown domain or study, bad agent spec."""


class _ReportingGroup(TyperGroup):
    """Turns ``NegotiationError`` from any command, nested sub-apps included, into one line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NegotiationError as exc:
            # One line per problem; a multi-problem message (several file:key lines) stays whole.
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_INPUT) from None


app = typer.Typer(
    cls=_ReportingGroup,
    name="nego",
    help="Negotiation RL study registry: domains, scenarios, scoring, parsing and episodes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def main() -> None:
    """Console-script entry point (``nego``)."""
    app()
