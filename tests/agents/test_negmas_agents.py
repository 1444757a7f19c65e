"""ANAC agents as parties (``negmas:<Name>``): real NegMAS negotiators play the text protocol.

The buyer's offers are what the negotiator proposed, its episodes repeat exactly (also replayed
after interleaving), unreadable turns are no offers, and a negotiator that raises, stalls or ends
the negotiation becomes its episode's error row.
"""

from __future__ import annotations

import asyncio
import random
import secrets

import numpy as np
import pytest

pytest.importorskip("negmas_genius_agents")

from negmas.preferences.generators import generate_multi_issue_ufuns  # noqa: E402
from negmas.inout import Scenario as NegmasScenario  # noqa: E402
from negmas_genius_agents import AgentK  # noqa: E402

from negotiation.agents import Reply, make_agent  # noqa: E402
from negotiation.agents._negmas import NegmasAgent  # noqa: E402
from negotiation.agents._negmas_table import outcome_contract, own_ufun  # noqa: E402
from negotiation.env import (EnvConfig, Negotiation, import_genius, load_domain, load_domain_file,  # noqa: E402
                             make_scenario, parse_message, run_episode)
from negotiation.errors import ConfigError  # noqa: E402
from negotiation.evaluation import CellSpec  # noqa: E402
from negotiation.evaluation._cell import play_episode  # noqa: E402

ENV = EnvConfig(max_rounds=6, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=4.5, accept_applies_terms=False)
CAR = make_scenario(load_domain("used_car"), 3)


class SpyK(AgentK):
    """AgentK recording what it proposed and what it was asked to answer."""

    proposed: list = []
    answered: list = []
    times: list = []

    def propose_(self, state, dest=None):
        outcome = super().propose_(state, dest)
        SpyK.proposed.append(outcome)
        SpyK.times.append(state.relative_time)
        return outcome

    def respond_(self, state, source=None):
        SpyK.answered.append(state.step)
        return super().respond_(state, source)


class Raiser(AgentK):
    def propose_(self, state, dest=None):
        if state.step >= 1:
            raise RuntimeError("boom in the negotiator")
        return super().propose_(state, dest)


class Staller(AgentK):
    def propose_(self, state, dest=None):
        return None


class BadInit(AgentK):
    def __init__(self, *args, **kwargs):
        raise ValueError("cannot start")


class Unseeded(AgentK):
    """Draws from the operating system, which no per-turn seed reaches."""

    def propose_(self, state, dest=None):
        return tuple(issue.values[secrets.randbelow(issue.cardinality)] for issue in self.nmi.outcome_space.issues)


def _buyer(cls=AgentK, levels=2) -> NegmasAgent:
    return NegmasAgent(f"negmas:{cls.__name__}", "buyer", cls, levels=levels)


def _play(scenario, buyer, seller="scripted:boulware"):
    return run_episode(scenario, make_agent(seller, "seller"), buyer, ENV)


def _texts(episode) -> list[str]:
    return [t.raw for t in episode.turns]


def test_the_buyers_offers_are_what_the_negotiator_proposed():
    SpyK.proposed.clear()
    SpyK.times.clear()
    episode = _play(CAR, _buyer(SpyK))
    counters = [t for t in episode.turns if t.role == "buyer" and parse_message(t.raw).action == "COUNTER"]
    assert counters and len(counters) == len(SpyK.proposed)
    for turn, outcome in zip(counters, SpyK.proposed):
        contract = outcome_contract(CAR.domain, outcome)
        assert {k: turn.ledger_after[k] for k in contract} == contract
    assert counters[0].raw.splitlines()[0].startswith(("Thanks", "I appreciate", "I've looked"))  # scripted prose
    # time is the round over the cap as NegMAS counts it: round r of R shows r / (R + 1)
    assert SpyK.times == pytest.approx([(t.turn // 2) / (ENV.max_rounds + 1) for t in counters])


def test_a_profiled_domain_from_negmas_plays_with_the_raw_profiles(tmp_path):
    random.seed(7)
    np.random.seed(7)
    ufuns = generate_multi_issue_ufuns(3, (3, 5), os_name="gen7", ufun_names=("seller", "buyer"),
                                       reserved_values=(0.0, 0.2), numeric_prob=-1)
    NegmasScenario(outcome_space=ufuns[0].outcome_space, ufuns=ufuns).to_genius_folder(tmp_path / "gen7")
    domain = load_domain_file(import_genius(tmp_path / "gen7", "gen7", tmp_path / "domains"))
    scenario = make_scenario(domain, 0)
    SpyK.proposed.clear()
    episode = _play(scenario, _buyer(SpyK))
    assert episode.outcome in ("deal", "no_deal") and SpyK.proposed
    outcomes = list(ufuns[1].outcome_space.enumerate())
    mine = own_ufun(domain, scenario.buyer, 2)  # what the agent plays with: the file's raw profile
    assert [mine(o) for o in outcomes] == pytest.approx([ufuns[1](o) for o in outcomes])
    assert ufuns[1](tuple(SpyK.proposed[0])) == pytest.approx(max(map(ufuns[1], outcomes)))  # opens at its best


def test_same_seed_same_transcript_and_replay_after_interleaving():
    # AgentK draws from ``random``: the episode's sample seed, not the process, decides its draws
    first = _texts(_play(CAR, _buyer(AgentK)))
    assert first == _texts(_play(CAR, _buyer(AgentK)))
    assert first != _texts(run_episode(CAR, make_agent("scripted:boulware", "seller"), _buyer(AgentK), ENV,
                                       sample_seed=99))
    # One agent object in two episodes played turn by turn in lockstep (a cell's concurrency):
    # each episode's negotiator is its own, so both transcripts equal the solo one.
    buyer, seller = _buyer(AgentK), make_agent("scripted:boulware", "seller")
    games = [Negotiation(CAR, ENV), Negotiation(CAR, ENV)]
    while not all(g.done for g in games):
        for game in games:
            if not game.done:
                game.apply((seller if game.next_role == "seller" else buyer).respond(game.view()))
    assert [t.raw for t in games[0].turns] == first == [t.raw for t in games[1].turns]
    fresh = _buyer(AgentK)  # a new pool's agent joining mid-episode replays the history
    game = Negotiation(CAR, ENV)
    for k in range(len(first)):
        game.apply((seller if game.next_role == "seller" else (buyer if k < 5 else fresh)).respond(game.view()))
    assert [t.raw for t in game.turns] == first[:len(game.turns)]


class Garbled:
    """A seller whose third turn cannot be read."""

    spec = "test:garbled"

    def __init__(self):
        self.inner = make_agent("scripted:boulware", "seller")

    def respond(self, view):
        return Reply("no json here") if view.turn == 3 else self.inner.respond(view)


def test_an_unreadable_turn_is_no_offer():
    SpyK.answered.clear()
    episode = run_episode(CAR, Garbled(), _buyer(SpyK), ENV)
    assert episode.turns[2].ok is False
    assert 1 not in SpyK.answered  # round 2 (step 1): the buyer only proposed, it answered nothing
    assert 0 in SpyK.answered and 2 in SpyK.answered


CELL = CellSpec(study="t", arm="a", seller="scripted:boulware", buyers={"anac": "negmas:x"},
                domains=("used_car",), seeds=(3,), dirichlet_alpha=0.3)


@pytest.mark.parametrize("cls,error_class,words", [
    (Raiser, "RuntimeError", "propose_ raised: boom in the negotiator"),
    (Staller, "NegotiatorStalled", "proposed nothing"),
    (BadInit, "ValueError", "construct raised: cannot start"),
])
def test_a_failing_negotiator_ends_its_episode_as_an_error_row(cls, error_class, words):
    row, turns = asyncio.run(play_episode(("a", "used_car", 3, "anac"), 0, CELL,
                                          make_agent("scripted:boulware", "seller"), _buyer(cls), ENV))
    assert row["outcome"] == "error" and row["error_class"] == error_class and turns == []
    assert f"negmas:{cls.__name__} (buyer) at turn" in row["error_message"] and words in row["error_message"]


def test_specs_name_their_bad_part():
    assert isinstance(make_agent("negmas:AgentK?levels=3", "seller"), NegmasAgent)
    with pytest.raises(ConfigError, match=r"'negmas:AgentKK':agent: unknown NegMAS agent 'AgentKK' \(did you mean"):
        make_agent("negmas:AgentKK", "buyer")
    with pytest.raises(ConfigError, match=r"'negmas:AgentK\?levels=1':levels: '1' is out of range"):
        make_agent("negmas:AgentK?levels=1", "buyer")
    with pytest.raises(ConfigError, match=r"'negmas:AgentK\?level=3':level: unknown option"):
        make_agent("negmas:AgentK?level=3", "buyer")


def test_without_the_anac_extra_the_spec_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "negmas_genius_agents", None)
    with pytest.raises(ConfigError, match=r"'negmas:AgentK': negmas_genius_agents is not installed .*\.\[anac\]"):
        make_agent("negmas:AgentK", "buyer")


def test_as_seller_it_opens_and_repeats():
    seller = NegmasAgent("negmas:AgentK", "seller", AgentK, levels=2)
    first = run_episode(CAR, seller, make_agent("scripted:titfortat", "buyer"), ENV)
    again = run_episode(CAR, NegmasAgent("negmas:AgentK", "seller", AgentK, levels=2),
                        make_agent("scripted:titfortat", "buyer"), ENV)
    assert parse_message(first.turns[0].raw).action == "COUNTER" and len(first.turns[0].ledger_after) == 10
    assert _texts(first) == _texts(again)


def test_the_check_names_an_agent_whose_randomness_escapes_the_seed(monkeypatch):
    from negotiation.agents import _negmas

    classes = {**_negmas.anac_classes(), "Unseeded": (None, Unseeded)}
    monkeypatch.setattr(_negmas, "anac_classes", lambda: classes)
    assert _negmas.check_negmas_agent("AgentK") is None
    assert _negmas.check_negmas_agent("Unseeded") == "not repeatable: the same seed gave two transcripts"
