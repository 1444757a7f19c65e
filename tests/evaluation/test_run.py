"""One full run over HTTP: Parquet tables, accounting, the audit's records, and planted-key safety."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest
from tests.evaluation.helpers import DEMO, FAST_RETRY, standin

from negotiation.evaluation import RunOptions, build_cell, evaluate_cell
from negotiation.protocol import load_json_model
from negotiation.study import PilotRecord, SamplingRecord

PLANTED = "planted-KEY-7f3a9c1e5b2d"
PRICE = "&usd_per_mtok_in=3&usd_per_mtok_out=15"


def evaluate(out: Path, server, seller_options: str = "", **options):
    cell = build_cell(DEMO, arm="llm_arm", seller=f"litellm:openai/boulware?api_base={server.api_base}{seller_options}",
                      buyers={"tft": f"litellm:openai/titfortat?api_base={server.api_base}"},
                      domains=("used_car", "job_offer"), seeds=(5_000_000, 5_000_001))
    run_options = RunOptions(concurrency=4, retry=FAST_RETRY, **options)
    return asyncio.run(evaluate_cell(cell, out, DEMO, protocol_hash="p" * 64, options=run_options,
                                     seller_sampling="self_served_seller"))


def test_a_run_writes_tables_accounting_and_audit_records(tmp_path):
    with standin() as server:
        result = evaluate(tmp_path, server, PRICE)
    assert result.ok and {g.decision for g in result.pilot.values()} == {"pass"}
    episodes = pd.read_parquet(tmp_path / "episodes.parquet")
    assert len(episodes) == 4 and {"domain", "seed", "buyer", "S", "prompt_hash", "cost", "retries"} <= set(episodes)
    assert set(episodes["prompt_hash"]) == {"evaluation@1:" + episodes["prompt_hash"][0].split(":")[1]}
    assert (pd.read_parquet(tmp_path / "turns.parquet").groupby(["domain", "seed"]).size().sum()
            == episodes["n_turns"].sum())
    seller_cost = episodes["tokens_in_seller"] * 3e-6 + episodes["tokens_out_seller"] * 15e-6
    assert episodes["cost"].to_numpy() == pytest.approx(seller_cost.to_numpy())  # the buyer has no known price
    accounting = json.loads((tmp_path / "accounting.json").read_text())["arms"]["llm_arm"]
    assert accounting["cost_known"] is False and accounting["usd_per_episode"] is None
    sampling = load_json_model(SamplingRecord, tmp_path / "sampling.json")
    assert sampling.seller.requested.model_dump() == {"temperature": 1.0, "top_p": None, "top_k": None,
                                                       "thinking": None}
    assert sampling.seller.accepted == sampling.seller.requested and set(sampling.buyers) == {"tft"}
    assert sampling.protocol_hash == "p" * 64
    detail = json.loads((tmp_path / "sampling_detail.json").read_text())["agents"]
    assert detail[f"seller:{result.episodes['seller'][0]}"]["requested"] == {"temperature": 1.0}
    record = load_json_model(PilotRecord, tmp_path / "pilot" / "llm_arm.json")
    assert [c.buyer for c in record.cells] == ["tft"] and record.cells[0].bad_parses == 0


def test_priced_cells_report_dollars_per_episode(tmp_path):
    with standin() as server:
        cell = build_cell(DEMO, arm="priced", seller=f"litellm:openai/boulware?api_base={server.api_base}{PRICE}",
                          buyers={"tft": f"litellm:openai/titfortat?api_base={server.api_base}{PRICE}"},
                          domains=("used_car",), seeds=(5_000_000, 5_000_001))
        result = asyncio.run(evaluate_cell(cell, tmp_path, DEMO, protocol_hash="p", options=RunOptions(
            pilot=False, retry=FAST_RETRY)))
    e = result.episodes
    tokens_in = e["tokens_in_seller"] + e["tokens_in_buyer"]
    tokens_out = e["tokens_out_seller"] + e["tokens_out_buyer"]
    want = float((tokens_in * 3e-6 + tokens_out * 15e-6).sum()) / len(e)
    assert result.accounting["priced"]["usd_per_episode"] == pytest.approx(want)


def test_no_planted_key_in_any_written_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANTED_API_KEY", PLANTED)
    with standin(bad_request_rate=1.0, echo_auth=True) as server:
        gated = evaluate(tmp_path / "gated", server, "&api_key_env=PLANTED_API_KEY")
        result = evaluate(tmp_path / "ungated", server, "&api_key_env=PLANTED_API_KEY", pilot=False)
    assert gated.pilot["tft"].decision == "incomplete" and gated.blocked == ["tft"]  # error rows decide nothing
    errors = result.episodes[result.episodes["outcome"] == "error"]
    assert len(errors) == 4 and not result.ok
    assert all("[redacted:PLANTED_API_KEY]" in m for m in errors["error_message"])  # the provider echoed it
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 5
    for path in written:
        assert PLANTED.encode() not in path.read_bytes(), path


def test_the_dvc_stage_entry_writes_the_audits_layout(tmp_path):
    from negotiation.evaluation import evaluate_arm
    from negotiation.study import load_study
    from negotiation.study import ResultsLayout

    study = load_study("demo")
    arm = study.arms["ref_conceder"]
    fast = DEMO.model_copy(update={"seeds": DEMO.seeds.model_copy(update={
        "evaluation": DEMO.seeds.evaluation.model_copy(update={"stop": DEMO.seeds.evaluation.start + 1})})})
    result = asyncio.run(evaluate_arm(study, "ref_conceder", arm.seller, tmp_path, protocol=fast))
    layout = ResultsLayout(tmp_path)
    assert result.ok and len(pd.read_parquet(layout.episodes("ref_conceder"))) == 9 * 2
    pilot = load_json_model(PilotRecord, layout.pilot("ref_conceder"))
    assert pilot.passed and {c.buyer for c in pilot.cells} == set(DEMO.buyers.evaluation)
    assert all(c.episodes == DEMO.pilot_gate.episodes_per_cell for c in pilot.cells)
    sampling = load_json_model(SamplingRecord, layout.sampling("ref_conceder"))
    assert sampling.arm == "ref_conceder" and set(sampling.buyers) == set(DEMO.buyers.evaluation)
