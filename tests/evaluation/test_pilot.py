"""The pilot gate: the protocol's rule decides, the result is recorded, a failed gate stops the cell
unless a deviation is named."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest
from tests.evaluation.helpers import DEMO

from negotiation.agents import AgentKind, make_agent, register_kind
from negotiation.agents import _kinds
from negotiation.evaluation import CellSpec, PilotResult, RunOptions, decide, evaluate_cell
from negotiation.protocol import PilotGate, load_json_model
from negotiation.study import PilotRecord

RULE = PilotGate(seeds_per_domain=1, episodes_per_cell=2, counted_turns="seller", max_bad_parses=0)


def frame(*rows):
    cols = ["outcome", "n_seller_turns", "n_bad_seller", "n_turns", "n_bad_all", "prompt_hash"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_decide_by_hand():
    clean = frame(("deal", 6, 0, 11, 1, "h"), ("no_deal", 12, 0, 24, 2, "h"))
    assert decide(clean, RULE, None) == {"episodes": 2, "error_rows": 0, "turns_counted": 18, "bad_parses": 0,
                                         "passed": True, "decision": "pass", "prompt_hash": "h"}
    sloppy = frame(("deal", 6, 2, 11, 3, "h"), ("deal", 5, 1, 10, 1, "h"))
    assert decide(sloppy, RULE, None)["decision"] == "fail" and decide(sloppy, RULE, None)["bad_parses"] == 3
    assert decide(sloppy, RULE, 7)["decision"] == "override" and not decide(sloppy, RULE, 7)["passed"]
    assert decide(sloppy, RULE.model_copy(update={"max_bad_parses": 3}), None)["decision"] == "pass"
    everyone = decide(clean, RULE.model_copy(update={"counted_turns": "all"}), None)
    assert (everyone["turns_counted"], everyone["bad_parses"], everyone["decision"]) == (35, 3, "fail")
    errored = frame(("deal", 6, 0, 11, 0, "h"), ("error", None, None, 3, None, "h"))
    got = decide(errored, RULE, 7)
    assert (got["decision"], got["error_rows"], got["turns_counted"], got["passed"]) == ("incomplete", 1, 6, False)


class Sloppy:
    """A seller whose opening turn never parses (then plays scripted)."""

    spec = "test:sloppy"

    def __init__(self):
        self.inner = make_agent("scripted:boulware", "seller")

    def respond(self, view):
        return self.inner.respond(view) if view.turn > 1 else make_agent("scripted:boulware", "seller").respond(
            view).text.replace('"action"', '"act"')


def factory(spec, role):
    return Sloppy() if spec == "test:sloppy" else make_agent(spec, role)


@pytest.fixture(autouse=True)
def test_kind(monkeypatch):
    """The ``test:`` kind this module's factory builds (a cell's fingerprint reads its record)."""
    monkeypatch.setattr(_kinds, "_KINDS", dict(_kinds._KINDS))
    register_kind(AgentKind("test", "tests.evaluation.test_pilot:factory", "reference_seller"))


CELL = CellSpec(study="demo", arm="sloppy_arm", seller="test:sloppy",
                buyers={"tft": "scripted:titfortat", "con": "scripted:conceder"}, domains=("used_car", "job_offer"),
                seeds=(5_000_000, 5_000_001), dirichlet_alpha=DEMO.environment.dirichlet_alpha)


def run(out, **options):
    return asyncio.run(evaluate_cell(CELL, out, DEMO, protocol_hash="h" * 64, options=RunOptions(**options),
                                     make_agent=factory))


def test_a_failed_gate_stops_the_cell_and_is_recorded(tmp_path):
    result = run(tmp_path)
    assert result.blocked == ["con", "tft"] and not result.ok and result.episodes.empty
    gate = PilotResult.model_validate(json.loads((tmp_path / "pilot" / "gate-sloppy_arm-tft.json").read_text()))
    assert (gate.decision, gate.bad_parses, gate.episodes, gate.deviation) == ("fail", 2, 2, None)
    assert gate.seeds == tuple(DEMO.seeds.pilot.seeds()) and gate.domains == ("used_car", "job_offer")
    record = load_json_model(PilotRecord, tmp_path / "pilot" / "sloppy_arm.json")
    assert not record.passed and [c.bad_parses for c in record.cells] == [2, 2] and record.protocol_hash == "h" * 64


def test_a_deviation_lets_a_failed_cell_run(tmp_path):
    result = run(tmp_path, deviation=7)
    assert result.blocked == [] and len(result.episodes) == 8
    gate = json.loads((tmp_path / "pilot" / "gate-sloppy_arm-con.json").read_text())
    assert (gate["decision"], gate["deviation"], gate["passed"]) == ("override", 7, False)
    # The pilot is not rerun on resume: its shards stay as they were.
    shards = sorted((tmp_path / "pilot" / "shards").glob("*/*.json"))
    run(tmp_path, deviation=7)
    assert sorted((tmp_path / "pilot" / "shards").glob("*/*.json")) == shards


def test_a_clean_seller_passes(tmp_path):
    cell = CELL.model_copy(update={"seller": "scripted:boulware", "arm": "clean"})
    result = asyncio.run(evaluate_cell(cell, tmp_path, DEMO, protocol_hash="h", options=RunOptions(),
                                       make_agent=factory))
    assert {b: g.decision for b, g in result.pilot.items()} == {"con": "pass", "tft": "pass"}
    assert result.ok and len(result.episodes) == 8


def test_pilot_can_be_skipped(tmp_path):
    result = run(tmp_path, pilot=False)
    assert result.pilot == {} and len(result.episodes) == 8 and not (tmp_path / "pilot").exists()
    with pytest.raises(ValueError):
        RunOptions(deviation=0)
