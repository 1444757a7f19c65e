"""Secrets through tracking: keys a provider echoes in content and errors reach no MLflow param,
tag, metric or artifact of the track stage, no file under the results folder, and no log line.

The results folder is produced for real (an evaluation against an echoing provider, the seller's
key under an arbitrary variable name and the buyer's under the provider's default variable), then
the track stage logs it; the whole store (``mlflow.db`` rows, ``mlruns/`` artifacts) and
everything logged or printed meanwhile are scanned for both keys.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from negotiation.evaluation import RunOptions, build_cell, evaluate_cell
from negotiation.pipeline import run_track
from negotiation.study import ResultsLayout, load_study, protocol_hash

ARM = "ref_boulware"
KEY_PAIRS = [("plain-looking-credential-42", "0123456789abcdef0123abcd"),
             ("Zq9_x.y~z/w+v==plainish", "sk-proj-AbCdEf0123456789xyzXYZ")]


class _EchoingProvider(BaseHTTPRequestHandler):
    """Puts the caller's key in its replies, and every third call in a 401 error."""

    calls = 0

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        key = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).calls += 1
        if type(self).calls % 3 == 0:
            status, body = 401, {"error": {"message": f"bad key {key}"}}
        else:
            content = f"Your key is {key}. " + json.dumps(
                {"action": "COUNTER", "terms": [{"name": "price", "value": 5}], "notes": key})
            status, body = 200, {"choices": [{"message": {"content": content}}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Silent: the test scans what the harness logs, not the server."""


def _evaluated_folder(tmp_path, seller_key: str, buyer_key: str, monkeypatch) -> ResultsLayout:
    monkeypatch.setenv("MY_PROVIDER_THING", seller_key)
    monkeypatch.setenv("OPENAI_API_KEY", buyer_key)  # the provider's default variable
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingProvider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api_base = f"http://127.0.0.1:{server.server_port}/v1"
    demo = load_study("demo").protocol
    layout = ResultsLayout(tmp_path / "outputs/demo")
    seller = f"litellm:openai/m?api_base={api_base}&api_key_env=MY_PROVIDER_THING&max_attempts=1"
    cell = build_cell(demo, arm=ARM, seller=seller, buyers={"llm": f"litellm:openai/b?api_base={api_base}&max_attempts=1"},
                      domains=("used_car",), seeds=(5_000_000, 5_000_001, 5_000_002))
    out = layout.dir / "evaluate" / ARM
    try:
        result = asyncio.run(evaluate_cell(cell, out, demo, protocol_hash=protocol_hash("demo"),
                                           options=RunOptions(pilot=False)))
    finally:
        server.shutdown()
    assert (result.episodes["outcome"] == "error").any()  # the provider's 401 echoed a key into an error
    (out / "metrics.json").write_text(json.dumps({"S": float(result.episodes["S"].mean()), "episodes": 3}))
    layout.seller(ARM).parent.mkdir(parents=True, exist_ok=True)
    layout.seller(ARM).write_text(json.dumps({"seller": seller, "weights_sha256": None}))
    return layout


def _store_text(db_path) -> str:
    """Every value of every row of every table of the MLflow store, as text."""
    with sqlite3.connect(db_path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"'))


@pytest.mark.parametrize("seller_key, buyer_key", KEY_PAIRS)
def test_echoed_keys_reach_no_mlflow_record_file_or_log(tmp_path, monkeypatch, caplog, capfd, seller_key,
                                                          buyer_key):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)  # the store's default artifact root (./mlruns) lands in tmp_path
    caplog.set_level(logging.DEBUG)
    layout = _evaluated_folder(tmp_path, seller_key, buyer_key, monkeypatch)
    logged = run_track("demo", layout.dir)["evaluation_runs"][ARM]

    from mlflow.tracking import MlflowClient

    run = MlflowClient().get_run(logged["run_id"])
    assert run.data.params and run.data.tags["arm"] == ARM  # params and tags were written, then scanned
    artifacts = [p for p in tmp_path.joinpath("mlruns").rglob("*") if p.is_file()]
    assert any(p.name == "turns.parquet" for p in artifacts)  # the tables went into the artifact store
    scanned = {"mlflow.db rows": _store_text(tmp_path / "mlflow.db"), "logs": caplog.text,
               "output": "".join(capfd.readouterr())}
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".db":
            scanned[str(path)] = (pd.read_parquet(path).astype(str).to_csv() if path.suffix == ".parquet"
                                  else path.read_text(encoding="utf-8", errors="replace"))
    for where, text in scanned.items():
        assert seller_key not in text and buyer_key not in text, where
    tables = "".join(pd.read_parquet(layout.dir / "evaluate" / ARM / name).astype(str).to_csv()
                     for name in ("episodes.parquet", "turns.parquet"))
    assert "[redacted:MY_PROVIDER_THING]" in tables  # the echo happened, and was redacted
