"""Invoke ``nego`` in-process and split its streams."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from negotiation.cli import app

RUNNER = CliRunner()


def nego(*args: str, stdin: str | None = None):
    """Run ``nego ARGS``; the result has ``exit_code``, ``stdout`` and ``stderr``."""
    return RUNNER.invoke(app, list(args), input=stdin)


def nego_json(*args: str, stdin: str | None = None):
    result = nego(*args, "--json", stdin=stdin)
    assert result.exit_code == 0, result.stderr or result.stdout
    return json.loads(result.stdout)


def assert_one_line_error(result, *fragments: str) -> None:
    """Exit 2, one ``error: ...`` line on stderr naming every fragment, and no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
