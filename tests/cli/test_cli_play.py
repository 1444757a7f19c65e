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
                               "--domain", "used_car", "--seed", "1"), "unknown kind 'boulware'", "known: hf")
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


class _ServedSeller:
    """Stands in for a ``vllm:`` agent: plays like a scripted seller and records its lifecycle."""

    events: list[str] = []

    def __init__(self, spec, role, settings, serve=None, fail_at: int | None = None):
        from negotiation.agents import make_agent

        self._agent, self._fail_at, self._turns = make_agent("scripted:boulware", role), fail_at, 0
        self.spec, self.role = spec.text, role

    async def astart(self) -> None:
        self.events.append("server started")

    async def aclose(self) -> None:
        self.events.append("server stopped")

    def __getattr__(self, name):
        method = getattr(self._agent, name)
        if not callable(method) or name.startswith("_"):
            return method

        def counted(*args, **kwargs):
            self._turns += 1
            self.events.append("turn")
            if self._fail_at is not None and self._turns >= self._fail_at:
                raise _call_error(self.spec, self.role)
            return method(*args, **kwargs)

        return counted


def _call_error(spec: str, role: str):
    from negotiation.agents._llm_retry import AgentCallError, CallFailure

    return AgentCallError(CallFailure("APIConnectionError", "server went away", transient=True),
                          retries=3, spec=spec, role=role)


def test_a_served_seller_runs_the_evaluate_lifecycle_started_and_stopped(monkeypatch):
    """``nego play --seller vllm:...`` goes through the harness's agent pool: the server is
    started before the first turn and stopped after the last, also when a call fails for good."""
    import negotiation.agents._llm_vllm as vllm  # the factory the vllm kind's record names

    for fail_at, status in ((None, 0), (2, 1)):
        _ServedSeller.events = []
        monkeypatch.setattr(vllm, "make_vllm_agent",
                            lambda spec, role, settings, serve=None, f=fail_at: _ServedSeller(spec, role, settings,
                                                                                              serve, f))
        result = nego("play", "--seller", "vllm:/models/base", "--buyer", "scripted:titfortat", "--domain",
                      "used_car", "--seed", "5000053")
        assert result.exit_code == status, result.stderr
        events = _ServedSeller.events
        assert events[0] == "server started" and events[-1] == "server stopped" and "turn" in events
        assert events.count("server started") == events.count("server stopped") == 1
        if status:
            assert_one_line_error_exit_1(result, "server went away")


def assert_one_line_error_exit_1(result, fragment: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_play_prints_no_key_a_provider_echoes(as_json, monkeypatch):
    """Regression: nego play showed an echoed key on stdout and in --json (stored records were clean)."""
    from tests.agents.test_llm_transport_anomalies import EchoServer
    from tests.cli.cli_runner import nego

    key = "Zq9_x.y~z/w+v==plainish"
    monkeypatch.setenv("MY_PROVIDER_THING", key)
    server = EchoServer([b""])
    try:
        seller = f"litellm:openai/m?api_base={server.api_base}&api_key_env=MY_PROVIDER_THING&max_attempts=1"
        result = nego("play", "--seller", seller, "--buyer", "scripted:conceder", "--domain", "used_car", "--seed", "1",
                      *(["--json"] if as_json else []))
    finally:
        server.close()
    shown = result.stdout + result.stderr
    assert key not in shown and key[:8] not in shown and "[redacted:MY_PROVIDER_THING]" in shown, shown[-2000:]


def test_a_ladder_checkpoint_plays_under_its_own_study(tiny_lm):
    """No ``--study`` and no ``max_tokens``: the base's warm_start.json names the lm study, whose
    sampling holds the token cap (docs/overview.md's ``nego play --seller hf:outputs/lm/init/lm_xs``)."""
    result = nego("play", "--seller", f"hf:{tiny_lm}", "--buyer", "scripted:titfortat",
                  "--domain", "used_car", "--seed", "5000053", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["study"] == "lm"


def test_the_study_of_a_checkpoint_is_the_outputs_folder_it_lies_in(root, tmp_path, monkeypatch):
    from negotiation.cli import checkpoint_study

    folder = root / "outputs" / "lm" / "train" / "lm_xs_shared" / "step_8"  # a trained step: no warm_start.json
    folder.mkdir(parents=True)
    monkeypatch.chdir(root)
    assert checkpoint_study(("scripted:boulware", "hf:outputs/lm/train/lm_xs_shared/step_8"), root) == "lm"
    assert checkpoint_study(("vllm:outputs/lm/train/lm_xs_shared/step_8?dtype=float32",), root) == "lm"
    (root / "outputs" / "scratch").mkdir()
    assert checkpoint_study(("hf:outputs/scratch", "hf:outputs", "scripted:boulware"), root) is None
    assert checkpoint_study(("hf:" + str(tmp_path / "elsewhere"),), root) is None
