"""``nego evaluate`` and ``nego serve-standin`` through typer's CliRunner on the ``nego`` app."""

from __future__ import annotations

import pandas as pd
from tests.evaluation.helpers import standin
from typer.testing import CliRunner

from negotiation.cli import app

RUN = CliRunner()


def test_evaluate_writes_parquet_with_the_key_columns(tmp_path):
    out = tmp_path / "out"
    result = RUN.invoke(app, ["evaluate", "--seller", "scripted:boulware", "--buyer", "tft=scripted:titfortat",
                              "--domains", "used_car,job_offer", "--seeds", "5000000:5000003", "--out", str(out)])
    assert result.exit_code == 0, result.output
    episodes = pd.read_parquet(out / "episodes.parquet")
    assert len(episodes) == 6 and {"domain", "seed", "buyer", "S"} <= set(episodes.columns)
    assert sorted(set(episodes["seed"])) == [5000000, 5000001, 5000002] and set(episodes["buyer"]) == {"tft"}
    assert set(episodes["arm"]) == {"scripted:boulware"}
    assert "pilot tft: pass" in result.output and "0 error rows" in result.output


def test_defaults_are_the_studys_buyers_and_all_nine_domains(tmp_path):
    result = RUN.invoke(app, ["evaluate", "--seller", "scripted:fixed", "--seeds", "5000000:5000001",
                              "--out", str(tmp_path), "--no-pilot", "--arm", "fixed_arm"])
    assert result.exit_code == 0, result.output
    episodes = pd.read_parquet(tmp_path / "episodes.parquet")
    assert len(episodes) == 9 * 2 and set(episodes["buyer"]) == {"boulware_e05", "titfortat"}
    assert set(episodes["arm"]) == {"fixed_arm"}


def test_error_rows_exit_1_and_retry_errors_is_accepted(tmp_path):
    with standin(bad_request_rate=1.0) as server:
        args = ["evaluate", "--seller", f"litellm:openai/boulware?api_base={server.api_base}", "--buyer",
                "scripted:titfortat", "--domains", "used_car", "--seeds", "5000000:5000002", "--out", str(tmp_path),
                "--no-pilot"]
        first = RUN.invoke(app, args)
        again = RUN.invoke(app, [*args, "--retry-errors"])
    assert first.exit_code == 1 and "2 error rows remain" in first.output
    assert again.exit_code == 1
    assert sorted(p.name.split(".")[-3] for p in tmp_path.glob("shards/*/*.json")) == ["a001", "a001", "a002", "a002"]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args, message in ((["--seeds", "9:3"], "--seeds:9:3"), (["--domains", "moon_base"], "--domains:moon_base"),
                          (["--buyer", "nonsense"], "nonsense"), (["--study", "nope"], "no study 'nope'")):
        result = RUN.invoke(app, ["evaluate", "--seller", "scripted:boulware", "--out", str(tmp_path), *args])
        assert result.exit_code == 2 and message in result.output, (args, result.output)


def test_serve_standin_refuses_unknown_fault_kinds():
    result = RUN.invoke(app, ["serve-standin", "--kinds", "429,meteor", "--port", "0"])
    assert result.exit_code == 2 and "meteor" in result.output


def test_json_is_one_object_on_stdout_and_the_summary_rounds_mean_s(tmp_path):
    import json
    import re

    args = ["evaluate", "--seller", "scripted:boulware", "--buyer", "tft=scripted:titfortat", "--domains", "used_car",
            "--seeds", "5000000:5000002"]
    result = RUN.invoke(app, [*args, "--out", str(tmp_path / "a"), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["ok"] is True and payload["error_rows"] == 0 and payload["blocked"] == []
    assert payload["pilot"]["tft"]["decision"] == "pass"
    totals = payload["accounting"]["scripted:boulware"]
    assert totals["episodes"] == 2 and payload["episodes"].endswith("episodes.parquet")
    text = RUN.invoke(app, [*args, "--out", str(tmp_path / "b")]).stderr
    assert f"mean S {totals['mean_S']:.4f}," in text and re.search(r"mean S \d\.\d{4},", text)
