"""Hostile command lines: every failure is one ``error:`` line, exit 2 for bad input, no traceback.

Table-driven over the inputs of the adversarial review (non-UTF-8 stdin, a lone surrogate in a
term name, a 5,000-digit integer or 20k-deep JSON in ``--ledger``, a 300-character or
path-like domain name, ``--timeout -1``, ``--out <existing file>``, ``--arm ..``, a message
holding rich markup) and more. Runs ``nego`` through its real entry point (``run``).
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from negotiation.cli._app import run

EVAL = ["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
        "--seeds", "0:1", "--no-pilot"]


def nego(args, capsys, monkeypatch, stdin: bytes = b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    status = run(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def assert_failure(status, err, want_status, *fragments):
    lines = err.strip().splitlines()
    assert status == want_status, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


BAD_INPUT = [
    (["score", "used_car", "1", "--ledger", "1" * 5000], "--ledger"),
    (["score", "used_car", "1", "--ledger", "[" * 20000 + "]" * 20000], "--ledger"),
    (["score", "used_car", "1", "--ledger", "{bad"], "--ledger"),
    (["score", "used_car", "1", "--ledger", "[/x] [bold]"], "[/x]"),
    (["scenario", "d" * 300, "1"], "domain"),
    (["scenario", "../../../../tmp/x", "1"], "domain"),
    (["scenario", "used_car", "-1"], ""),
    (["scenario", "used_car", "one"], "seed"),
    (["score", "used_car"], ""),
    (["no-such-command"], ""),
    (["domains", "--no-such-flag"], "--no-such-flag"),
    (["play", "--seller", "scripted:boulware?e=nan", "--buyer", "scripted:conceder", "--domain", "used_car",
      "--seed", "1"], ":e:"),
    (["play", "--seller", "litellm:openai/m?api-key=hunter2hunter2", "--buyer", "scripted:conceder",
      "--domain", "used_car", "--seed", "1"], "api-key"),
    (["play", "--seller", "scripted:boulware?tempreature=1", "--buyer", "scripted:conceder", "--domain",
      "used_car", "--seed", "1"], "tempreature"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domain", "used_car",
      "--seed", "1", "--study", "../x"], "study"),
    ([*EVAL, "--timeout", "-1", "--out", "OUT"], "--timeout"),
    ([*EVAL, "--concurrency", "0", "--out", "OUT"], "--concurrency"),
    ([*EVAL, "--arm", "..", "--out", "OUT"], "--arm"),
    ([*EVAL, "--arm", ".", "--out", "OUT"], "--arm"),
    ([*EVAL, "--backoff", "nan", "--out", "OUT"], "backoff"),
    (["scenario", "used_car", "1", "--study", "a/../../b"], "study"),
]


@pytest.mark.parametrize("args, fragment", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys, monkeypatch, tmp_path):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    status, out, err = nego(args, capsys, monkeypatch)
    assert_failure(status, err, 2, fragment)
    assert "hunter2hunter2" not in err


def test_out_naming_an_existing_file_is_bad_input(capsys, monkeypatch, tmp_path):
    existing = tmp_path / "results.txt"
    existing.write_text("keep me")
    status, _, err = nego([*EVAL, "--out", str(existing)], capsys, monkeypatch)
    assert_failure(status, err, 2, "results.txt")
    assert existing.read_text() == "keep me"


@pytest.mark.parametrize("stdin", [b"\xff\xfe{\"action\": \"ACCEPT\"}", b"{" * 100_000, b"\x00" * 10,
                                   '{"action":"COUNTER","terms":[{"name":"\\ud800","value":1}]}'.encode()])
def test_parse_is_total_over_any_stdin(stdin, capsys, monkeypatch):
    status, out, err = nego(["parse", "--json"], capsys, monkeypatch, stdin)
    assert status == 0 and err == "" and out.startswith("{")


def test_a_lone_surrogate_in_a_term_name_is_printed_not_a_crash(capsys, monkeypatch):
    status, out, err = nego(["score", "used_car", "1", "--ledger", '{"\udc80x": 1, "price": 1e309}', "--json"],
                            capsys, monkeypatch)
    assert status == 0 and "Traceback" not in err


def test_an_unexpected_failure_is_one_line_and_exit_1(capsys, monkeypatch):
    import negotiation.cli._env_cmds as env_cmds

    def boom(*_):
        raise RuntimeError("disk on fire [/x]")

    monkeypatch.setattr(env_cmds, "load_domains", boom)
    status, _, err = nego(["domains"], capsys, monkeypatch)
    assert_failure(status, err, 1, "RuntimeError: disk on fire [/x]")


HEAVY = ("torch", "mlflow", "dvc", "great_expectations", "transformers", "litellm", "pandas")
"""pandas too: the episode tables import it only when a frame is built (about 0.2 s of start-up)."""
LIGHT = [[], ["--help"], ["--version"], ["domains"], ["scenario", "used_car", "1"],
         ["score", "used_car", "1", "--ledger", '{"price": 1}'], ["parse"]]


@pytest.mark.parametrize("args", LIGHT, ids=lambda a: " ".join(a) or "import negotiation.cli")
def test_light_commands_import_no_heavy_framework(args):
    code = ("import io, sys, contextlib\nfrom negotiation.cli import run\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    status = run({args!r}) if {bool(args)} else 0\n"
            f"print(status, [m for m in {HEAVY!r} if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, input="ACCEPT")
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


def test_help_lists_lazy_commands_by_their_own_help_without_importing_them():
    import click
    import typer

    from negotiation.cli._app import _LAZY, _load

    for name, (_, short_help) in _LAZY.items():
        assert _load(name).get_short_help_str(1_000) == short_help, name
    group = typer.main.get_command(__import__("negotiation.cli", fromlist=["app"]).app)
    formatter = click.HelpFormatter(width=200)
    group.format_commands(click.Context(group), formatter)
    assert all(f"{name} " in formatter.getvalue() for name in _LAZY)


def test_play_against_an_unreachable_endpoint_is_one_line_and_exit_1(capsys, monkeypatch):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    seller = f"litellm:openai/m?api_base=http://127.0.0.1:{port}/v1&max_attempts=1&timeout=2"
    status, _, err = nego(["play", "--seller", seller, "--buyer", "scripted:conceder", "--domain", "used_car",
                           "--seed", "1"], capsys, monkeypatch)
    assert_failure(status, err, 1, "APIConnectionError")


def test_play_with_a_corrupt_policy_checkpoint_is_bad_input(capsys, monkeypatch, tmp_path):
    from negotiation.agents._policy import Policy, PolicyArch

    Policy(PolicyArch(width=8)).save(tmp_path / "ck")
    (tmp_path / "ck" / "weights.pt").write_bytes(b"not a checkpoint")
    status, _, err = nego(["play", "--seller", f"policy:{tmp_path / 'ck'}", "--buyer", "scripted:conceder",
                           "--domain", "used_car", "--seed", "1"], capsys, monkeypatch)
    assert_failure(status, err, 2, "weights.pt")
