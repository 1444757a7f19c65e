"""The cell runner: same episodes as the engine, error rows instead of moves, resume, concurrency."""

from __future__ import annotations

import asyncio
import math

import pytest
from tests.evaluation.helpers import DEMO, ENV

from negotiation.agents import make_agent
from negotiation.agents._llm_retry import AgentCallError
from negotiation.agents._llm_transport import CallFailure
from negotiation.env import Reply, arun_episode, episode_row, load_domain, make_scenario
from negotiation.evaluation import CellSpec, ResultsStore, run_cell

CELL = CellSpec(study="demo", arm="a", seller="scripted:boulware",
                buyers={"tft": "scripted:titfortat", "con": "scripted:conceder"},
                domains=("used_car", "job_offer"), seeds=(5_000_000, 5_000_001),
                dirichlet_alpha=DEMO.environment.dirichlet_alpha)


def run(cell, store, factory=make_agent, **kw):
    return asyncio.run(run_cell(cell, store, ENV, factory, **kw))


def test_keys_are_seed_major_over_domains_and_buyers():
    assert CELL.keys()[:4] == [("a", "used_car", 5_000_000, "con"), ("a", "used_car", 5_000_000, "tft"),
                               ("a", "job_offer", 5_000_000, "con"), ("a", "job_offer", 5_000_000, "tft")]
    assert len(CELL.keys()) == 8 and len(CELL.keys(["tft"])) == 4


def test_cell_rows_equal_the_engines_episodes(tmp_path):
    store = ResultsStore(tmp_path)
    progress = run(CELL, store, concurrency=3)
    assert (progress.total, progress.done, progress.errors) == (8, 8, 0)
    episodes, turns = store.frames()
    seller = make_agent("scripted:boulware", "seller")
    rows = {(r["domain"], r["seed"], r["buyer"]): r for r in episodes.to_dict("records")}
    for _, domain, seed, label in CELL.keys():
        got = rows[(domain, seed, label)]
        scenario = make_scenario(load_domain(domain), seed, CELL.dirichlet_alpha)
        episode = asyncio.run(arun_episode(scenario, seller, make_agent(CELL.buyers[label], "buyer"), ENV))
        want = episode_row(episode, {"arm": "a", "study": "demo", "buyer": label, "attempt": 1, "prompt_hash": "",
                                     "cost_known": True})
        assert got == pytest.approx(want, nan_ok=True)
    assert len(turns) == int(episodes["n_turns"].sum())


def test_resume_plays_nothing_twice(tmp_path):
    store = ResultsStore(tmp_path)
    run(CELL, store)
    again = run(CELL, store)
    assert (again.total, again.done, again.skipped) == (0, 0, 8)
    assert len(list((tmp_path / "shards").glob("*/*.json"))) == 8


class FailingAgent:
    """Plays scripted moves, then fails for good on its ``fail_on``-th call."""

    def __init__(self, role, fail_on, transient=False, error_class="BadRequestError"):
        self.spec, self.inner, self.fail_on, self.transient, self.calls = "test:failing", make_agent(
            "scripted:boulware", role), fail_on, transient, 0
        self.error_class = error_class

    async def arespond(self, view):
        self.calls += 1
        if self.calls == self.fail_on:
            failure = CallFailure(self.error_class, "HTTP 400: invalid request", transient=self.transient)
            raise AgentCallError(failure, retries=3, spec=self.spec, role=view.role)
        reply = self.inner.respond(view)
        return Reply(reply.text, tokens_in=100, tokens_out=10, cost=0.001, retries=1)


def test_a_permanent_failure_is_one_error_row_and_never_a_move(tmp_path):
    cell = CELL.model_copy(update={"buyers": {"tft": "scripted:titfortat"}, "domains": ("used_car",),
                                   "seeds": (5_000_000,)})
    failing = FailingAgent("seller", fail_on=2)
    store = ResultsStore(tmp_path)
    progress = run(cell, store, lambda spec, role: failing if role == "seller" else make_agent(spec, role))
    episodes, turns = store.frames()
    row = episodes.iloc[0].to_dict()
    assert (progress.errors, progress.error_classes) == (1, {"BadRequestError": 1})
    assert row["outcome"] == "error" and not row["deal"] and math.isnan(row["S"]) and math.isnan(row["reward"])
    assert row["error_class"] == "BadRequestError"
    assert row["error_message"] == "seller call at turn 3: HTTP 400: invalid request"
    assert row["n_turns"] == 2  # the seller's opening and the buyer's reply; the failed call played nothing
    assert (row["tokens_in_seller"], row["tokens_out_seller"], row["tokens_in_buyer"]) == (100, 10, 0)
    assert row["retries"] == 1 + 3 and row["cost"] == pytest.approx(0.001)
    assert turns.empty  # no turn rows for an error row
    assert len(list((tmp_path / "shards").glob("*/*.a001.error.json"))) == 1
    played, _ = store_of_played(cell, tmp_path / "played")
    assert list(episodes.columns) == list(played.columns)  # one schema: the engine's columns, in its order


ONE_EPISODE = CELL.model_copy(update={"buyers": {"tft": "scripted:titfortat"}, "domains": ("used_car",),
                                      "seeds": (5_000_000,)})


def test_a_seller_whose_context_is_spent_ends_the_episode_as_a_no_deal(tmp_path):
    failing = FailingAgent("seller", fail_on=3, error_class="ContextWindowExceededError")
    store = ResultsStore(tmp_path)
    progress = run(ONE_EPISODE, store, lambda spec, role: failing if role == "seller" else make_agent(spec, role))
    episodes, turns = store.frames()
    row = episodes.iloc[0].to_dict()
    assert progress.errors == 0 and row["outcome"] == "no_deal" and not row["deal"]
    assert row["S"] == pytest.approx(-DEMO.environment.no_deal_penalty)
    assert row["n_turns"] == 4 < ENV.max_turns  # two rounds played, then the seller could not speak
    assert len(turns) == 4 and list(turns["turn"]) == [1, 2, 3, 4]


@pytest.mark.parametrize("role, fail_on", [("seller", 1), ("buyer", 2)])
def test_an_opening_or_buyer_context_overflow_stays_an_error_row(tmp_path, role, fail_on):
    failing = FailingAgent(role, fail_on=fail_on, error_class="ContextWindowExceededError")
    store = ResultsStore(tmp_path)
    progress = run(ONE_EPISODE, store, lambda spec, r: failing if r == role else make_agent(spec, r))
    episodes, turns = store.frames()
    assert progress.error_classes == {"ContextWindowExceededError": 1}
    assert episodes.iloc[0]["outcome"] == "error" and turns.empty


def store_of_played(cell, folder):
    store = ResultsStore(folder)
    run(cell, store)
    return store.frames()


def test_retry_errors_reruns_the_error_row_as_a_second_attempt(tmp_path):
    cell = CELL.model_copy(update={"buyers": {"tft": "scripted:titfortat"}, "domains": ("used_car",),
                                   "seeds": (5_000_000,)})
    store = ResultsStore(tmp_path)
    run(cell, store, lambda spec, role: FailingAgent(role, 1) if role == "seller" else make_agent(spec, role))
    assert run(cell, store).total == 0  # error rows are kept unless asked
    progress = run(cell, store, retry_errors=True)
    episodes, _ = store.frames()
    assert progress.done == 1 and list(episodes["outcome"]) != ["error"] and list(episodes["attempt"]) == [2]


def test_a_bug_in_an_agent_stops_the_cell(tmp_path):
    class Broken:
        spec = "test:broken"

        def respond(self, view):
            raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        run(CELL, ResultsStore(tmp_path), lambda spec, role: Broken() if role == "seller" else make_agent(spec, role))
    assert not list((tmp_path / "shards").glob("*/*.json"))


def test_concurrency_bounds_the_episodes_in_flight(tmp_path):
    state = {"now": 0, "peak": 0}

    class Slow:
        def __init__(self, role):
            self.spec, self.inner = f"test:slow-{role}", make_agent("scripted:boulware", role)

        async def arespond(self, view):
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.002)
            state["now"] -= 1
            return self.inner.respond(view)

    cell = CELL.model_copy(update={"seeds": tuple(range(5_000_000, 5_000_005))})
    run(cell, ResultsStore(tmp_path), lambda spec, role: Slow(role), concurrency=4)
    assert state["peak"] == 4
