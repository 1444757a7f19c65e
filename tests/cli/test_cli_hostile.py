"""Hostile command lines: every failure is one ``error:`` line, exit 2 for bad input, no traceback.

Table-driven over the inputs of the adversarial review (non-UTF-8 stdin, a lone surrogate in a
term name, a 5,000-digit integer or 20k-deep JSON in ``--ledger``, a 300-character or
path-like domain name, ``--timeout -1``, ``--out <existing file>``, ``--arm ..``, a message
holding rich markup) and more. Runs ``nego`` through its real entry point (``run``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from negotiation.cli._app import run
from negotiation.study import default_root

REPO = default_root()

EVAL = ["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
        "--seeds", "0:1", "--no-pilot"]


def nego(args, capsys, monkeypatch, stdin: bytes = b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    monkeypatch.setenv("NEGO_ROOT", str(REPO))  # restored after the test, also when --root changed it
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


SCORE = ["score", "used_car", "1", "--ledger"]
PLAY = ["play", "--buyer", "scripted:conceder", "--domain", "used_car", "--seed", "1", "--seller"]
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing answers, so an unvalidated option fails fast, not hangs
LLM = f"litellm:openai/m?api_base={DEAD}&max_attempts=1&timeout=2"

BAD_INPUT = [  # (arguments, fragment the one error line must hold); every case exits 2
    # --ledger: JSON that cannot be a ledger
    ([*SCORE, "1" * 5000], "--ledger"),
    ([*SCORE, "[" * 20000 + "]" * 20000], "--ledger"),
    ([*SCORE, '{"a":' * 20000 + "1" + "}" * 20000], "--ledger"),
    ([*SCORE, "{bad"], "--ledger"),
    ([*SCORE, "[/x] [bold]"], "[/x]"),
    ([*SCORE, ""], "--ledger"),
    ([*SCORE, "[1, 2]"], "--ledger"),
    ([*SCORE, '"price"'], "--ledger"),
    ([*SCORE, "null"], "--ledger"),
    ([*SCORE, "42"], "--ledger"),
    ([*SCORE, '{"price": 1'], "--ledger"),
    ([*SCORE, "{'price': 1}"], "--ledger"),
    ([*SCORE, '{"price": 1} trailing'], "--ledger"),
    (["score", "used_car", "1"], "--ledger"),
    (["score", "used_car", "1", "--ledger"], "--ledger"),
    (["score", "used_car"], ""),
    (["score"], ""),
    (["score", "nope", "1", "--ledger", "{}"], "nope"),
    (["score", "d" * 300, "1", "--ledger", "{}"], "domain"),
    (["score", "../../../../tmp/x", "1", "--ledger", "{}"], "domain"),
    (["score", "used_car", "-3", "--ledger", "{}"], ""),
    (["score", "used_car", "1.5", "--ledger", "{}"], ""),
    (["score", "used_car", "1", "--ledger", "{}", "--study", "nope"], "nope"),
    # scenario: domain names are names, never paths
    (["scenario", "d" * 300, "1"], "domain"),
    (["scenario", "../../../../tmp/x", "1"], "domain"),
    (["scenario", "/etc/passwd", "1"], "domain"),
    (["scenario", "", "1"], "domain"),
    (["scenario", "used car", "1"], "domain"),
    (["scenario", "[/x]", "1"], "[/x]"),
    (["scenario", "\udc80", "1"], "domain"),
    (["scenario", "nope", "1"], "nope"),
    (["scenario", "used_car", "-1"], ""),
    (["scenario", "used_car", "one"], "seed"),
    (["scenario", "used_car", "1e3"], "seed"),
    (["scenario", "used_car"], ""),
    (["scenario", "used_car", "1", "extra"], ""),
    (["scenario", "used_car", "1", "--study", "a/../../b"], "study"),
    (["scenario", "used_car", "1", "--study", ".."], "study"),
    (["scenario", "used_car", "1", "--study", ""], "study"),
    (["scenario", "used_car", "1", "--study", "x" * 300], "study"),
    # the app itself
    (["no-such-command"], ""),
    (["domains", "--no-such-flag"], "--no-such-flag"),
    (["parse", "--no-such-flag"], "--no-such-flag"),
    (["--root", "/nonexistent/root", "domains"], "/nonexistent/root"),
    (["--root", "/", "domains"], "not a repository root"),
    # play: agent specs and options validated per kind before anything runs
    ([*PLAY, "scripted:boulware?e=nan"], ":e:"),
    ([*PLAY, "scripted:boulware?e=-1"], ":e:"),
    ([*PLAY, "scripted:fixed?target=-inf"], "target"),
    ([*PLAY, "scripted:boulware?floor=1e309"], "floor"),
    ([*PLAY, "scripted:boulware?tempreature=0.1"], "tempreature"),
    ([*PLAY, "scripted:nope"], "nope"),
    ([*PLAY, "scripted:"], "target"),
    ([*PLAY, "robot:x"], "robot"),
    ([*PLAY, "boulware"], "boulware"),
    ([*PLAY, ""], "spec"),
    ([*PLAY, "litellm:openai/m?api-key=hunter2hunter2"], "api-key"),
    ([*PLAY, "litellm:openai/m?key=hunter2hunter2"], "key"),
    ([*PLAY, "litellm:openai/m?api_key=hunter2hunter2"], "api_key"),
    ([*PLAY, f"{LLM}&max_concurrency=0"], "max_concurrency"),
    ([*PLAY, f"{LLM}&max_concurrency=-1"], "max_concurrency"),
    ([*PLAY, f"litellm:openai/m?api_base={DEAD}&timeout=-5"], "timeout"),
    ([*PLAY, f"litellm:openai/m?api_base={DEAD}&max_attempts=0"], "max_attempts"),
    ([*PLAY, f"{LLM}&temperature=nan"], "temperature"),
    ([*PLAY, f"{LLM}&temperature=abc"], "temperature"),
    ([*PLAY, f"{LLM}&tempreature=0.1"], "tempreature"),
    ([*PLAY, "policy:/nonexistent/checkpoint"], "/nonexistent/checkpoint"),
    ([*PLAY, "hf:/nonexistent/model"], "/nonexistent/model"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder?e=nan", "--domain", "used_car",
      "--seed", "1"], ":e:"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domain", "../../x", "--seed",
      "1"], "domain"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domain", "used_car", "--seed",
      "-1"], "--seed"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domain", "used_car", "--seed",
      "1", "--phase", "nope"], "--phase"),
    (["play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domain", "used_car", "--seed",
      "1", "--study", "../x"], "study"),
    (["play", "--seller", "scripted:boulware"], ""),
    # evaluate: flags and specs validated before a shard is written
    ([*EVAL, "--timeout", "-1", "--out", "OUT"], "--timeout"),
    ([*EVAL, "--timeout", "nan", "--out", "OUT"], "timeout"),
    ([*EVAL, "--timeout", "inf", "--out", "OUT"], "timeout"),
    ([*EVAL, "--concurrency", "0", "--out", "OUT"], "--concurrency"),
    ([*EVAL, "--concurrency", "-1", "--out", "OUT"], "--concurrency"),
    ([*EVAL, "--max-attempts", "0", "--out", "OUT"], "--max-attempts"),
    ([*EVAL, "--backoff", "nan", "--out", "OUT"], "backoff"),
    ([*EVAL, "--backoff", "-1", "--out", "OUT"], "--backoff"),
    ([*EVAL, "--backoff-max", "-1", "--out", "OUT"], "--backoff-max"),
    ([*EVAL, "--arm", "..", "--out", "OUT"], "--arm"),
    ([*EVAL, "--arm", ".", "--out", "OUT"], "--arm"),
    ([*EVAL, "--arm", "a/b", "--out", "OUT"], "--arm"),
    ([*EVAL, "--arm", "", "--out", "OUT"], "--arm"),
    ([*EVAL, "--arm", "x" * 300, "--out", "OUT"], "--arm"),
    ([*EVAL, "--study", "nope", "--out", "OUT"], "nope"),
    ([*EVAL, "--study", "../demo", "--out", "OUT"], "study"),
    (["evaluate", "--seller", "scripted:boulware?e=nan", "--buyer", "scripted:conceder", "--domains", "used_car",
      "--seeds", "0:1", "--no-pilot", "--out", "OUT"], ":e:"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "bad", "--domains", "used_car", "--seeds", "0:1",
      "--no-pilot", "--out", "OUT"], "bad"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "a b=scripted:conceder", "--domains", "used_car",
      "--seeds", "0:1", "--no-pilot", "--out", "OUT"], "buyer"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "nope",
      "--seeds", "0:1", "--no-pilot", "--out", "OUT"], "nope"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "../../tmp/x",
      "--seeds", "0:1", "--no-pilot", "--out", "OUT"], "domain"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
      "--seeds", "5:2", "--no-pilot", "--out", "OUT"], "--seeds"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
      "--seeds", "a:b", "--no-pilot", "--out", "OUT"], "--seeds"),
    (["evaluate", "--seller", "scripted:boulware"], "--out"),
    (["evaluate", "--seller", f"{LLM}&max_concurrency=0", "--buyer", "scripted:conceder", "--domains",
      "used_car", "--seeds", "0:1", "--no-pilot", "--out", "OUT"], "max_concurrency"),
    # the other command groups: names checked, unknown studies named
    (["protocol", "verify", "nope"], "nope"),
    (["protocol", "verify", "../x"], "study"),
    (["protocol", "verify"], ""),
    (["audit", "nope"], "nope"),
    (["audit", "../../x"], "study"),
    (["deviation", "check-index", "demo", "--against", "no-such-revision-xyz"], "--against"),
    (["deviation", "check-index", "../x", "--against", "HEAD"], "study"),
    (["pipeline", "plan", "nope", "--check"], "nope"),
    (["status", "../x"], "study"),
    (["frontier", "nope", "1"], "nope"),
    (["frontier", "used_car", "-1"], ""),
    (["contrast", "/nonexistent/a.parquet", "/nonexistent/b.parquet"], "/nonexistent/a.parquet"),
    (["contrast", "TMP/not.parquet", "TMP/cols.parquet"], "not a Parquet episode table"),
    (["contrast", "TMP", "TMP/cols.parquet"], "a folder, not an episode table"),
    (["contrast", "TMP/cols.parquet", "TMP/cols2.parquet"], "cols.parquet:arm: column missing"),
    (["--root", "TMP/loop_a", "audit", "demo"], "--root:"),
    (["signoff", "w16_base", "--reader", "r", "--verdict", "pass", "--transcripts", "3", "--date", "2026-02-30"],
     "--date:2026-02-30"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "",
      "--seeds", "0:1", "--no-pilot", "--out", "OUT"], "names no domain"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
      "--seeds", "0:9999999999999", "--no-pilot", "--out", "OUT"], "at most"),
    (["evaluate", "--seller", "scripted:boulware", "--buyer", "scripted:conceder", "--domains", "used_car",
      "--seeds", f"{2**64}:{2**64 + 2}", "--no-pilot", "--out", "OUT"], "below 2**63"),
    (["viewer", "--out", "TMP/fifo"], "fifo:<file>: a FIFO"),
    (["viewer", "--out", "TMP"], ":<file>: a folder"),
    (["train-config", "nope", "arm", "--no-tokenizer"], "nope"),
    (["serve-standin", "--error-rate", "2"], "--error-rate"),
    (["serve-standin", "--kinds", "nope", "--port", "0"], "kinds"),
    (["serve-standin", "--port", "70000"], "--port"),
]


@pytest.mark.parametrize("args, fragment", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys, monkeypatch, tmp_path):
    import os

    import pandas as pd

    (tmp_path / "not.parquet").write_text("x")
    for name in ("cols.parquet", "cols2.parquet"):
        pd.DataFrame({"a": [1]}).to_parquet(tmp_path / name)
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    os.mkfifo(tmp_path / "fifo")
    args = [str(tmp_path / "out") if a == "OUT" else a.replace("TMP", str(tmp_path)) for a in args]
    status, out, err = nego(args, capsys, monkeypatch)
    assert_failure(status, err, 2, fragment)
    assert "hunter2hunter2" not in err
    assert not (tmp_path / "out" / "shards").exists()  # refused before anything ran


def test_out_naming_an_existing_file_is_bad_input(capsys, monkeypatch, tmp_path):
    existing = tmp_path / "results.txt"
    existing.write_text("keep me")
    status, _, err = nego([*EVAL, "--out", str(existing)], capsys, monkeypatch)
    assert_failure(status, err, 2, "results.txt")
    assert existing.read_text() == "keep me"


PARSE_STDIN = [  # nego parse is total: every one of these is a parse (ok or flagged), exit 0
    b"\xff\xfe{\"action\": \"ACCEPT\"}", b"\xff" * 1000, b"", b"\x00" * 10, b"{" * 100_000, b"[" * 20_000,
    b"1" * 1_000_000, '{"action":"COUNTER","terms":[{"name":"\\ud800","value":1}]}'.encode(),
    b'{"action":"COUNTER","terms":[{"name":"price","value":1e309}]}',
    b'{"action":"COUNTER","terms":[{"name":"price","value":' + b"9" * 5000 + b"}]}",
    b'{"action":"ACCEPT","action":"REJECT"}', b"\xef\xbb\xbf{\"action\": \"ACCEPT\"}",
    b"[/x] [bold]not markup[/bold] <|im_end|> {\"action\": \"ACCEPT\"}",
]


@pytest.mark.parametrize("stdin", PARSE_STDIN, ids=[repr(s[:30]) for s in PARSE_STDIN])
def test_parse_is_total_over_any_stdin(stdin, capsys, monkeypatch):
    status, out, err = nego(["parse", "--json"], capsys, monkeypatch, stdin)
    assert status == 0 and err == "" and isinstance(json.loads(out)["ok"], bool)


def test_markup_in_a_message_is_printed_as_text(capsys, monkeypatch):
    status, out, err = nego(["parse"], capsys, monkeypatch, b"[/x] [bold]shout[/bold] {\"action\": \"ACCEPT\"}")
    assert status == 0 and "[/x] [bold]shout[/bold]" in out


def test_a_lone_surrogate_in_a_term_name_is_printed_not_a_crash(capsys, monkeypatch):
    status, out, err = nego(["score", "used_car", "1", "--ledger", '{"\udc80x": 1, "price": 1e309}', "--json"],
                            capsys, monkeypatch)
    assert status == 0 and "Traceback" not in err


def test_an_unexpected_failure_is_one_line_and_exit_1(capsys, monkeypatch):
    import negotiation.env

    def boom(*_):
        raise RuntimeError("disk on fire [/x]")

    monkeypatch.setattr(negotiation.env, "load_domains", boom)  # `nego domains` looks it up when it runs
    status, _, err = nego(["domains"], capsys, monkeypatch)
    assert_failure(status, err, 1, "RuntimeError: disk on fire [/x]")


HEAVY = ("torch", "mlflow", "dvc", "great_expectations", "transformers", "litellm", "pandas")
"""pandas too: the episode tables import it only when a frame is built (about 0.2 s of start-up)."""
OPTIONS_ONLY = ("pydantic", "numpy", "yaml", "rich", "asyncio")
"""Not for the commands that only parse options or a message: typer's own pydantic adapters
(``negotiation.cli._coerce`` converts plain values without them), the scenario draw, protocol
files, rich's console and the engine's event loop."""
LIGHT = [[], ["--help"], ["--version"], ["domains"], ["scenario", "used_car", "1"],
         ["score", "used_car", "1", "--ledger", '{"price": 1}'], ["parse"], ["play", "--help"], ["evaluate", "--help"]]


def _imported(args: list[str], modules: tuple[str, ...]) -> str:
    """``"<exit status> [those of modules imported]"`` of ``nego args`` in a fresh interpreter."""
    code = ("import io, sys, contextlib\nfrom negotiation.cli import run\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    status = run({args!r}) if {bool(args)} else 0\n"
            f"print(status, [m for m in {modules!r} if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, input="ACCEPT")
    return result.stdout.strip() + result.stderr


@pytest.mark.parametrize("args", LIGHT, ids=lambda a: " ".join(a) or "import negotiation.cli")
def test_light_commands_import_no_heavy_framework(args):
    heavy = HEAVY + OPTIONS_ONLY if args[-1:] in ([], ["--help"], ["--version"], ["parse"]) else HEAVY
    assert _imported(args, heavy) == "0 []"


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
