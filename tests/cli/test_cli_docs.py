"""Every ``nego`` command the README and docs/ cite exists (docs/nemo-rl.md once cited a
``nego pipeline status`` that never did)."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from negotiation.cli import app

REPO = Path(__file__).resolve().parents[2]
CITED = re.compile(r"\bnego((?: [a-z][a-z-]*)+)")


TOP = typer.main.get_command(app)


def _unknown(words: list[str]) -> str | None:
    """``words`` cut at the first that names no command (a group's next word must be one of its
    subcommands; a leaf's words are its arguments); None when the path resolves."""
    command = TOP
    for i, word in enumerate(words):
        if not hasattr(command, "list_commands"):  # a leaf (typer's own click: no isinstance on click.Group)
            return None
        if word not in command.list_commands(None):  # the lazy group names its commands before loading them
            return " ".join(words[: i + 1])
        command = command.get_command(None, word)
    return None


def test_every_cited_nego_command_exists():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    missing = []
    for page in pages:
        for code in re.findall(r"`([^`]+)`|```[a-z]*\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            for match in CITED.finditer(" ".join(code)):
                words = match.group(1).split()
                bad = _unknown(words)
                if bad is not None:
                    missing.append(f"{page.relative_to(REPO)}: nego {bad}")
    assert not missing, missing


def test_the_check_sees_a_missing_subcommand():
    assert _unknown(["pipeline", "status"]) == "pipeline status"
    assert _unknown(["pipeline", "plan", "demo"]) is None and _unknown(["status", "demo"]) is None
    assert _unknown(["nonsense"]) == "nonsense"
