"""Every ``nego`` command that takes a study loads it once (issue 29); tests/study/test_load_once.py
covers status, audit, validate, protocol verify and play. Commands that write run against a copy
of protocol/ and registry/ (``--root``); long-running parts (a server, a learning task) are stubbed
past the load.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import negotiation.study
from tests.cli.cli_runner import nego

EXCEPTIONS = {
    ("scenario",): "reads protocol/<study>/protocol.yaml's environment section alone (load_environment): "
                   "a light command",
    ("score",): "as scenario",
    ("domain", "export"): "as scenario (a drawn domain's α)",
    ("deviation", "check-index"): "compares the deviation index with git's; no study",
}
"""Commands taking a study that do not load it once, and why (the loads they make: zero)."""
GROUPS = ("deviation", "domain", "pipeline", "protocol")
"""Command groups: a command's path is its first two words."""


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    from negotiation.analysis import write_synthetic_results

    study = negotiation.study.load_study("demo")
    folder = tmp_path_factory.mktemp("load_once") / "results"
    return write_synthetic_results(study.protocol, list(study.arms), folder, seed=3).dir


def _count(loads: list, *args: str, codes: tuple[int, ...] = (0,)) -> int:
    before = len(loads)
    result = nego(*args)
    assert result.exit_code in codes, (args, result.exit_code, result.stdout, result.stderr)
    return len(loads) - before


def _commands(tables: Path, tmp: Path, root: Path) -> list[tuple[str, ...]]:
    episodes = [str(tables / "evaluate" / arm / "episodes.parquet") for arm in ("ref_conceder", "ref_boulware")]
    return [
        ("evaluate", "--seller", "scripted:boulware", "--domains", "used_car", "--seeds", "5000000:5000001",
         "--no-pilot", "--out", str(tmp / "eval"), "--study", "demo"),
        ("serve-standin", "--port", "0", "--study", "demo"),
        ("contrast", *episodes, "--resamples", "100", "--study", "demo"),
        ("power", *episodes, "--study", "demo"),
        ("frontier", "used_car", "5000053", "--study", "demo"),
        ("analyze", "--study", "demo", "--results", str(tables), "--resamples", "100"),
        ("report", "--study", "demo", "--results", str(tables), "--resamples", "100", "--out", str(tmp / "report")),
        ("viewer", "--study", "demo", "--results", str(tables), "--out", str(tmp / "viewer.html"),
         "--max-episodes", "20"),
        ("packet", "--study", "demo", "--results", str(tables), "--out", str(tmp / "packet")),
        ("signoff", "w16_lr3x", "--reader", "r", "--verdict", "pass", "--transcripts", "10", "--study", "demo",
         "--root", str(root)),
        ("deviation", "new", "demo", "--category", "not_run", "--title", "one", "--what", "what", "--why", "why",
         "--impact", "none", "--arm", "ref_conceder", "--root", str(root)),
        ("deviation", "new", "demo", "--category", "arm_added", "--title", "two", "--what", "what", "--why", "why",
         "--impact", "none", "--add-arm", "ref_twin", "--like", "ref_conceder", "--root", str(root)),
        ("protocol", "freeze", "demo", "--root", str(root)),
        ("pipeline", "plan", "demo", "--check"),
        ("pipeline", "plan", "lm", "--check", "--json"),
        ("train-config", "paper", "e2b_lr3x", "--no-tokenizer", "--out", str(tmp / "grpo.yaml"), "--root", str(root)),
        ("learn-task", "format", "--study", "lm", "--out", str(tmp / "learning")),
    ]


def test_every_command_loads_the_study_once(tables, tmp_path, root, loads, monkeypatch):
    import negotiation.cli._standin_cmds as standin
    import negotiation.learning as learning

    class Server:  # serves nothing: the command returns once it printed where it serves
        port, api_base = 1, "http://127.0.0.1:1/v1"

        def __init__(self, config):
            pass

        async def serve_forever(self):
            return None

    monkeypatch.setattr(standin, "StandinServer", Server)
    monkeypatch.setattr(learning, "run_learning_task", lambda *a, **kw: {"passed": True, "criteria": []})
    counts = {}
    for args in _commands(tables, tmp_path, root):
        counts[args] = _count(loads, *args, codes=(0, 1))
    assert {args: n for args, n in counts.items() if n != 1} == {}


def _exceptions(tmp: Path) -> list[tuple[str, ...]]:
    return [("scenario", "used_car", "5", "--study", "demo"),
            ("score", "used_car", "5", "--ledger", "{}", "--study", "demo"),
            ("domain", "export", "used_car", str(tmp / "genius"), "--study", "demo"),
            ("deviation", "check-index", "demo", "--against", "HEAD")]


def _path(args: tuple[str, ...]) -> tuple[str, ...]:
    return args[:2] if args[0] in GROUPS else args[:1]


def test_the_exceptions_load_nothing(tmp_path, loads):
    commands = _exceptions(tmp_path)
    assert {_path(args) for args in commands} == set(EXCEPTIONS)
    assert {args: _count(loads, *args) for args in commands} == dict.fromkeys(commands, 0)


COUNTED_IN_TEST_LOAD_ONCE = {("status",), ("audit",), ("validate",), ("protocol", "verify"), ("play",)}


def _study_commands(command, path: tuple[str, ...], ctx) -> set[tuple[str, ...]]:
    """Every command under ``command`` with a ``study`` argument or option, as its path."""
    if hasattr(command, "list_commands"):
        found = set()
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            found |= _study_commands(sub, (*path, name), sub.context_class(sub, parent=ctx))
        return found
    return {path} if any(p.name == "study" for p in command.params) else set()


def test_every_study_command_is_counted_somewhere(tmp_path):
    """A new command taking a study joins one of the lists above (or test_load_once.py's)."""
    import typer.main

    from negotiation.cli import app

    group = typer.main.get_command(app)
    listed = {_path(args) for args in _commands(tmp_path, tmp_path, tmp_path)} | set(EXCEPTIONS)
    assert _study_commands(group, (), group.context_class(group)) == listed | COUNTED_IN_TEST_LOAD_ONCE
