"""The ``nego`` typer app and its error boundary.

Command groups live in their own modules and register themselves on ``app`` (see
``negotiation.cli.__init__``); the groups over heavier packages are registered lazily
(``lazy_command``: imported only when invoked, so ``nego parse`` and ``nego --help`` never
import torch, MLflow or the analysis stack; help lists them by their registered one-line help).

Every failure is one line on stderr, ``error: <file or argument>:<key>: <reason>``, printed as
plain text (never rich markup, which data could contain), without a traceback: exit 2 for
input that cannot be used (``NegotiationError``, bad arguments, unreadable files or stdin),
1 for a run that failed otherwise (``NEGO_TRACEBACK=1`` shows the traceback), 130 when
interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperGroup

try:  # typer >= 0.17 runs on its own copy of click, whose exit and abort are typer's own
    from typer._click.exceptions import UsageError

    Exit: tuple[type[BaseException], ...] = (typer.Exit,)
    Abort: tuple[type[BaseException], ...] = (typer.Abort,)
except ImportError:  # pragma: no cover - older typer on the real click
    from click.exceptions import Abort as _ClickAbort
    from click.exceptions import Exit as _ClickExit
    from click.exceptions import UsageError

    Exit = (typer.Exit, _ClickExit)
    Abort = (typer.Abort, _ClickAbort)

if TYPE_CHECKING:
    import click

from negotiation._install import install_hint
from negotiation.cli._coerce import install_plain_params
from negotiation.errors import ConfigError, NegotiationError, format_validation_error

__all__ = ["EXIT_FAILED", "EXIT_INPUT", "app", "lazy_command", "main", "one_line", "run"]

EXIT_INPUT = 2
"""Exit status for input that cannot be used: bad JSON, unknown domain or study, bad agent spec."""
EXIT_FAILED = 1
"""Exit status for a run that failed for another reason."""
_LAZY: dict[str, tuple[str, str]] = {}
_NO_LIMIT = 1_000
"""Help lines are listed whole (the formatter wraps them), loaded or lazy alike."""


def lazy_command(name: str, target: str, short_help: str) -> None:
    """Register ``module:attribute`` (a typer app or a command function) as ``nego <name>``.

    The module is imported only when the command is invoked or its own help is asked for;
    ``nego --help`` lists it with ``short_help`` (a test checks it is the command's own).
    """
    _LAZY[name] = (target, short_help)


def _load(name: str) -> click.Command:
    module_name, attribute = _LAZY[name][0].split(":")
    obj = getattr(importlib.import_module(module_name), attribute)
    # Help as ``nego``'s own (add_typer would hand its markup mode down): plain text, no rich
    # markup read from docstrings, and no rich help renderer to import.
    if isinstance(obj, typer.Typer):
        obj.rich_markup_mode = app.rich_markup_mode
        command = typer.main.get_group(obj)  # a group even with one subcommand, as add_typer mounts it
    else:
        single = typer.Typer(rich_markup_mode=app.rich_markup_mode, add_completion=False)
        single.command(name)(obj)
        command = typer.main.get_command(single)
    command.name = name
    return command


def one_line(text: str) -> str:
    """A message as one line: several problems are joined by ``; ``."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip()) or "(no message)"


class _ReportingGroup(TyperGroup):
    """Resolves lazily registered commands; errors are reported by ``main``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in _LAZY if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _LAZY:
            self.add_command(_load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Lazy commands are listed by their registered help: loading them would import every
        # heavy package just to print a line each.
        rows = [(name, command.get_short_help_str(_NO_LIMIT)) for name, command in self.commands.items()
                if not command.hidden]
        rows += [(name, short_help) for name, (_, short_help) in _LAZY.items() if name not in self.commands]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        # Also reached through click's test runner, which does not go through ``run``.
        try:
            return super().invoke(ctx)
        except (*Exit, *Abort):
            raise
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the boundary: one line, a status
            raise typer.Exit(_report(exc)) from None


install_plain_params()  # option values converted without pydantic where that is exact (_coerce)
app = typer.Typer(
    cls=_ReportingGroup,
    name="nego",
    help="Negotiation RL study registry: domains, scenarios, scoring, parsing and episodes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _usage_line(exc: UsageError) -> str:
    param = getattr(exc, "param", None)
    where = (param.opts[0] if getattr(param, "opts", None) else getattr(param, "name", None)) or "<arguments>"
    command = exc.ctx.command_path if exc.ctx is not None else "nego"
    return f"{command} {where}: {exc.format_message()}"


def failure_line(exc: BaseException) -> tuple[str, int]:
    """``(one-line message, exit status)`` for an exception leaving a command."""
    if isinstance(exc, NegotiationError):
        return str(exc), EXIT_INPUT
    # Options checked by a model: input, named by field. Looked up, not imported: a process
    # that never imported pydantic (`nego --help`) cannot have raised its error.
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return format_validation_error("<options>", exc), EXIT_INPUT
    if isinstance(exc, UsageError):
        return _usage_line(exc), EXIT_INPUT
    if isinstance(exc, (*Abort, KeyboardInterrupt)):
        return "interrupted", 130
    if isinstance(exc, UnicodeError):
        return f"<input>: not valid text ({type(exc).__name__}: {exc})", EXIT_INPUT
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "<io>"
        return f"{where}: {exc.strerror or exc}", EXIT_INPUT
    if isinstance(exc, ImportError) and install_hint(exc):  # a package of an extra the core leaves out
        return str(install_hint(exc)), EXIT_FAILED
    if os.environ.get("NEGO_TRACEBACK"):
        traceback.print_exception(exc)
    return f"{type(exc).__name__}: {exc} (NEGO_TRACEBACK=1 shows where)", EXIT_FAILED


def _report(exc: BaseException) -> int:
    line, status = failure_line(exc)
    sys.stderr.write(f"error: {one_line(line)}\n")
    sys.stderr.flush()
    return status


def run(args: list[str] | None = None) -> int:
    """Run ``nego`` with ``args``; the exit status (every failure reported as one line)."""
    try:
        result = app(args=args, prog_name="nego", standalone_mode=False)
    except Exit as exc:
        return exc.exit_code
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the boundary: one line, a status
        return _report(exc)
    return result if isinstance(result, int) else 0


def _show_version(value: bool) -> None:
    if value:
        from negotiation import __version__

        typer.echo(f"nego {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Print the version and exit."),
    root: Optional[Path] = typer.Option(
        None, "--root", file_okay=False,
        help="Repository root holding protocol/ and registry/ (default: $NEGO_ROOT, else found from the "
             "working directory upwards)."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="More log output (-vv: debug)."),
    quiet: int = typer.Option(0, "--quiet", "-q", count=True, help="Only errors in the log output."),
) -> None:
    """Negotiation RL study registry: domains, scenarios, scoring, parsing and episodes."""
    from negotiation._logging import configure_logging
    from negotiation._root import ROOT_ENV, find_root

    configure_logging(verbose - quiet)
    if root is not None:
        try:
            resolved = root.resolve()
        except (RuntimeError, OSError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
            raise ConfigError(f"--root:{root}: cannot be resolved ({exc})") from exc
        os.environ[ROOT_ENV] = str(resolved)  # subprocesses (stages, servers) inherit it
        find_root()  # a folder without protocol/ and registry/ is refused here, by name


def main() -> None:
    """Console-script entry point (``nego``)."""
    sys.exit(run())
