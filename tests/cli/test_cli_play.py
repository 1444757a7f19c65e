"""``nego play``: a readable transcript, a reproducible JSON record, both phases."""

from __future__ import annotations

import json

import pytest

from negotiation.cli import env_config_for
from tests.cli.cli_runner import assert_one_line_error, nego, nego_json

ACCEPTANCE = ("play", "--seller", "scripted:boulware", "--buyer", "scripted:titfortat",
              "--domain", "used_car", "--seed", "5000053")


def test_acceptance_command_prints_a_transcript_ending_in_an_outcome():
    result = nego(*ACCEPTANCE)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.index("turn  1 · seller") < out.index("turn  2 · buyer")
    # This seed's scripted pair closes: the seller accepts the buyer's counter on turn 21.
    assert "DEAL on turn 21 (round 11), accepted by seller" in out
    assert "NO DEAL" not in out


def test_json_record_matches_the_transcript_and_reproduces():
    record = nego_json(*ACCEPTANCE)
    assert record == nego_json(*ACCEPTANCE)
    assert record["outcome"] in ("deal", "no_deal") and record["domain"] == "used_car"
    assert len(record["turns"]) == record["n_turns"] and record["turns"][0]["role"] == "seller"
    assert record["n_rounds"] == (record["n_turns"] + 1) // 2
    assert record["phase"] == "evaluation" and record["study"] == "demo"
    assert record["final_ledger"] == record["turns"][-1]["ledger_after"]
    assert (record["outcome"], record["closed_by"], record["n_turns"]) == ("deal", "seller", 21)
    assert record["S"] == record["seller_u"]  # a deal scores the seller's utility, no penalty
    assert record["seller_u_dist"] + record["seller_u_integ"] == pytest.approx(record["seller_u"], abs=1e-12)
    out = nego(*ACCEPTANCE).stdout
    for turn in record["turns"]:
        assert f"turn {turn['turn']:>2} · {turn['role']}" in out


def test_no_deal_shows_the_floor():
    record = nego_json("play", "--seller", "scripted:fixed?target=1", "--buyer", "scripted:fixed?target=1",
                       "--domain", "used_car", "--seed", "5000001")
    config = env_config_for("demo", "evaluation")
    assert record["outcome"] == "no_deal" and record["n_turns"] == config.max_turns
    assert record["S"] == -config.no_deal_penalty and record["seller_u"] is None
    text = nego("play", "--seller", "scripted:fixed?target=1", "--buyer", "scripted:fixed?target=1",
                "--domain", "used_car", "--seed", "5000001").stdout
    assert f"NO DEAL after {config.max_turns} turns" in text


def test_training_phase_is_recorded():
    record = nego_json(*ACCEPTANCE, "--phase", "training")
    assert record["phase"] == "training"


def test_bad_spec_and_phase():
    assert_one_line_error(nego("play", "--seller", "scripted:bogus", "--buyer", "scripted:titfortat",
                               "--domain", "used_car", "--seed", "1"), "agent spec 'scripted:bogus':persona")
    assert_one_line_error(nego("play", "--seller", "boulware", "--buyer", "scripted:titfortat",
                               "--domain", "used_car", "--seed", "1"), "expected 'kind:target'")
    bad_phase = nego(*ACCEPTANCE, "--phase", "pretraining")
    assert bad_phase.exit_code == 2 and "Traceback" not in bad_phase.stderr


def test_a_language_model_seller_writes_the_transcript(tiny_lm):
    """``hf:`` through the same lifecycle as ``nego evaluate``: loaded, played, released."""
    result = nego("play", "--seller", f"hf:{tiny_lm}?max_tokens=24", "--buyer", "scripted:titfortat",
                  "--domain", "used_car", "--seed", "5000053", "--json")
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    seller_turns = [t for t in record["turns"] if t["role"] == "seller"]
    assert seller_turns and all(0 < t["tokens_out"] <= 24 and t["tokens_in"] > 100 for t in seller_turns)
    assert record["seller"].startswith("hf:") and len({t["raw"] for t in seller_turns}) > 1
