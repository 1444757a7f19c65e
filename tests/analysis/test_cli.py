"""The analysis commands through typer's CliRunner on the package's own app."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from negotiation.analysis import ValidationFailed
from negotiation.analysis._bargaining import signed_distance
from negotiation.cli._analysis_cmds import analysis_app
from negotiation.registry import SignoffError
from negotiation.analysis._frontier import Frontier

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(analysis_app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_contrast_json_contract_and_reproducibility(demo_root, demo_results):
    a = demo_results / "evaluate" / "w16_lr3x" / "episodes.parquet"
    b = demo_results / "evaluate" / "w16_base" / "episodes.parquet"
    first = invoke("contrast", a, b, "--metric", "S", "--resamples", 2000, "--seed", 4, "--json", "--root", demo_root)
    again = invoke("contrast", a, b, "--metric", "S", "--resamples", 2000, "--seed", 4, "--json", "--root", demo_root)
    assert first.exit_code == 0 and first.output == again.output
    payload = json.loads(first.output)
    assert {"mean", "ci", "p", "clusters"} <= set(payload)
    merged = pd.read_parquet(a).merge(pd.read_parquet(b), on=["domain", "seed", "buyer"])
    assert payload["mean"] == pytest.approx((merged["S_x"] - merged["S_y"]).mean())
    assert payload["clusters"] == 8 and payload["ci"][0] <= payload["mean"] <= payload["ci"][1]
    text = invoke("contrast", a, b, "--resamples", 2000, "--root", demo_root).output
    assert "8 seed clusters" in text and "144 paired episodes" in text
    share = json.loads(invoke("contrast", a, b, "--metric", "welfare_share", "--resamples", 1000, "--json",
                              "--root", demo_root).output)
    both = merged[merged["deal_x"] & merged["deal_y"]]
    assert share["episodes"] == len(both) and share["clusters"] == 8
    late = json.loads(invoke("contrast", a, b, "--metric", "closes_late", "--resamples", 1000, "--json",
                             "--root", demo_root).output)
    expected = ((both["closing_turn_x"] >= 16).astype(float) - (both["closing_turn_y"] >= 16).astype(float)).mean()
    assert late["mean"] == pytest.approx(expected)


def test_frontier_json_contract(demo_root):
    payload = json.loads(invoke("frontier", "used_car", 5000001, "--json", "--root", demo_root).output)
    pareto = np.array(payload["pareto"])
    assert (np.diff(pareto[:, 0]) >= 0).all() and (np.diff(pareto[:, 1]) <= 0).all()
    frontier = Frontier(pareto, (None,) * len(pareto), np.zeros(len(pareto) - 1, bool),
                        np.zeros(len(pareto) - 1, int), None, 0)
    assert signed_distance(frontier, np.array([payload["nash"]]))[0] == pytest.approx(0.0, abs=1e-9)
    assert payload["max_welfare"] >= sum(payload["nash"]) - 1e-12
    assert "Nash point" in invoke("frontier", "used_car", 5000001, "--root", demo_root).output


def test_signoff_is_recorded_in_the_registry(demo_root):
    result = invoke("signoff", "w16_lr3x", "--reader", "ana", "--verdict", "pass", "--transcripts", 10,
                    "--date", "2026-11-30", "--root", demo_root)
    assert result.exit_code == 0
    written = yaml.safe_load((demo_root / "registry" / "demo" / "signoffs" / "w16_lr3x.yaml").read_text())
    assert written["reader"] == "ana" and written["verdict"] == "pass"
    assert written["domain_families"] == ["training", "held_out"]
    with pytest.raises(SignoffError, match=r"signoffs/w16_lr3x\.yaml:verdict: .*got 'maybe'"):
        invoke("signoff", "w16_lr3x", "--reader", "ana", "--verdict", "maybe", "--transcripts", 10,
               "--root", demo_root)
    with pytest.raises(SignoffError, match="signoff:arm: 'nope' is not an arm of study 'demo'"):
        invoke("signoff", "nope", "--reader", "ana", "--verdict", "pass", "--transcripts", 1, "--root", demo_root)
    (demo_root / "registry" / "demo" / "signoffs" / "w16_lr3x.yaml").unlink()


def test_validate_report_packet_and_viewer(demo_root, demo_results, tmp_path):
    assert invoke("validate", "--results", demo_results, "--root", demo_root).exit_code == 0
    report = invoke("report", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "report",
                    "--resamples", 2000)
    assert report.exit_code == 0
    md = (tmp_path / "report" / "report.md").read_text()
    for heading in ("Table 1:", "Table 2:", "Table 3:", "Table 4:", "Table 5:", "Table 6:", "Table 9:",
                    "Guards per trained arm", "Deviation log", "Protocol compliance", "Held-out panel",
                    "Pareto/Nash"):
        assert heading in md
    assert "Doubling rule (w128, ×2)" in md
    contrasts = json.loads((demo_results / "analyze" / "contrasts.json").read_text())
    assert contrasts["version"] == 1 and sum(c["spec"]["primary"] for c in contrasts["contrasts"]) == 4
    packet = invoke("packet", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "packet")
    assert packet.exit_code == 0
    rows = pd.read_csv(tmp_path / "packet" / "packet.csv")
    assert set(rows.groupby(["arm", "family"]).size()) == {5}
    # 13 trained demo arms (4 sizes x shared init, shared cont, 3x; one 10x), two domain families
    assert len(rows) == 5 * 2 * 13
    again = invoke("packet", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "packet2")
    assert again.exit_code == 0 and pd.read_csv(tmp_path / "packet2" / "packet.csv").equals(rows)
    viewer = invoke("viewer", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "v.html",
                    "--arm", "w16_base", "--arm", "w16_lr3x")
    assert viewer.exit_code == 0 and (tmp_path / "v.html").stat().st_size > 10_000


def test_report_stops_when_validation_fails(demo_root, demo_results, tmp_path):
    broken = tmp_path / "results"
    shutil.copytree(demo_results / "evaluate", broken / "evaluate")
    table = pd.read_parquet(broken / "evaluate" / "w32_base" / "episodes.parquet")
    table.loc[3, ["outcome", "S"]] = ["error", np.nan]
    # A passing validation is on file; the table then changes, so the report re-validates.
    assert invoke("validate", "--results", broken, "--root", demo_root).exit_code == 0
    table.to_parquet(broken / "evaluate" / "w32_base" / "episodes.parquet", index=False)  # broken after validation
    with pytest.raises(ValidationFailed, match=r"expect_column_values_to_be_in_set\(outcome\): 1 unexpected rows, "
                                               r"e\.g\. outcome='error', arm='w32_base'"):
        invoke("report", "--results", broken, "--root", demo_root, "--out", tmp_path / "report")
    assert not (tmp_path / "report").exists()
    assert invoke("validate", "--results", broken, "--root", demo_root).exit_code == 1


def test_validate_analyze_report_and_viewer_print_one_json_object(demo_root, demo_results, tmp_path):
    demo_results = shutil.copytree(demo_results, tmp_path / "results")  # analyze rewrites analyze/: a private copy
    validated = invoke("validate", "--results", demo_results, "--root", demo_root, "--json")
    payload = json.loads(validated.stdout)
    assert validated.exit_code == 0 and payload["success"] is True and payload["checks"]
    assert all({"expectation", "column", "success", "unexpected_count"} <= set(c) for c in payload["checks"])
    analyzed = json.loads(invoke("analyze", "--results", demo_results, "--root", demo_root, "--resamples", 1000,
                                 "--json").stdout)
    assert "contrasts.json" in analyzed["files"] and analyzed["contrasts"] > 0 and analyzed["guards"] > 0
    report = json.loads(invoke("report", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "r",
                               "--resamples", 1000, "--json").stdout)
    assert {"report.html", "report.md"} <= set(report["files"])
    assert all(Path(p).exists() for p in report["files"].values())
    viewer = json.loads(invoke("viewer", "--results", demo_results, "--root", demo_root, "--out", tmp_path / "v.html",
                               "--arm", "w16_base", "--json").stdout)
    assert viewer == {"study": "demo", "viewer": str(tmp_path / "v.html")}
