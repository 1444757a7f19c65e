"""The cell runner: one seller arm against its buyers over a scenario set, concurrently.

Episodes run as asyncio tasks, at most ``concurrency`` at a time (and at most an endpoint's own
bound per endpoint, inside the LLM agents). Each finished episode is written to the results
store at once, so a crash loses only the episodes in flight and a rerun resumes.

An agent call that fails for good (a permanent error, or retries exhausted) ends its episode as
ONE error row (``negotiation.env.error_row``: the episode table's columns, ``outcome = "error"``,
the error's class and message, NaN scores, the counts, tokens, cost and retries spent so far),
and no turn rows. The failed call is never applied as a move.
One failure is an outcome instead: a seller whose next prompt no longer fits its model's
context (``CONTEXT_SPENT``) after it has spoken cannot speak again, so the episode ends there
as a no-deal before the turn cap, the way training's rollout driver truncates it (its score is
the no-deal's ``-λ``; docs/evaluation.md). The turns played stay in the tables.
Any other exception is a bug and stops the cell.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from negotiation.agents import AgentCallError
from negotiation.env import (
    EnvConfig, Negotiation, aplay_turn, episode_row, error_row, load_domain, make_scenario, turn_rows,
)

if TYPE_CHECKING:  # the store (pandas) loads with the cell runner's callers, not for one episode (nego play)
    from negotiation.evaluation._store import Key, ResultsStore

CONTEXT_SPENT = "ContextWindowExceededError"
"""Error class of a prompt plus its token cap over the model's context (``hf:``'s check, a server's 400)."""


class CellSpec(BaseModel):
    """An evaluation cell: seller arm x buyers x domains x seeds."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Cell format version."""
    study: str
    """Study name (recorded in every row)."""
    arm: str
    """Arm name: the ``arm`` key column."""
    seller: str
    """Seller agent spec."""
    buyers: dict[str, str] = Field(min_length=1)
    """Buyer label (the ``buyer`` key column) -> agent spec."""
    domains: tuple[str, ...] = Field(min_length=1)
    """Domains, by name."""
    seeds: tuple[int, ...] = Field(min_length=1)
    """Scenario seeds, each played on every domain against every buyer."""

    @field_validator("domains", "seeds")
    @classmethod
    def _once_each(cls, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """Each domain and seed once, in the order first named: a repeat would play the same keys
        twice at once (two writers of one shard and one temporary file)."""
        return tuple(dict.fromkeys(values))
    dirichlet_alpha: float = Field(gt=0)
    """Concentration of the importance prior (protocol ``environment``)."""

    def keys(self, buyers: list[str] | None = None) -> list[Key]:
        """Keys in run order: seed-major, so a partial run covers every domain and buyer evenly."""
        labels = sorted(self.buyers) if buyers is None else buyers
        return [(self.arm, d, s, b) for s in self.seeds for d in self.domains for b in labels]


@dataclass
class CellProgress:
    """Running totals for progress bars and the final summary."""

    total: int = 0
    done: int = 0
    skipped: int = 0
    errors: int = 0
    retries: int = 0
    tokens: int = 0
    cost: float = 0.0
    error_classes: dict[str, int] = field(default_factory=dict)

    def add(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.retries += int(row.get("retries") or 0)
        self.tokens += sum(int(row.get(c) or 0) for c in
                           ("tokens_in_seller", "tokens_out_seller", "tokens_in_buyer", "tokens_out_buyer"))
        cost = row.get("cost")
        self.cost += 0.0 if cost is None or (isinstance(cost, float) and math.isnan(cost)) else float(cost)
        if row.get("outcome") == "error":
            self.errors += 1
            self.error_classes[row["error_class"]] = self.error_classes.get(row["error_class"], 0) + 1


def prompt_hash_of(*agents: Any) -> str:
    """Hashes of the prompt templates the episode's prompted agents use ('' for scripted-only)."""
    return "|".join(sorted({h for a in agents if (h := getattr(a, "prompt_hash", None))}))


def _cost_known(game: Negotiation, agents: tuple[Any, Any]) -> bool:
    """Whether every turn of a priced (LLM) agent reported a cost."""
    priced = {a.spec for a in agents if hasattr(a, "price")}
    return all(t.reply.cost is not None for t in game.turns
               if (agents[0].spec if t.role == "seller" else agents[1].spec) in priced)


async def play_episode(key: Key, attempt: int, cell: CellSpec, seller: Any, buyer: Any, env: EnvConfig
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Play one episode to the end; ``(episode row, turn rows)`` or an error row and no turns."""
    _, domain, seed, label = key
    scenario = make_scenario(load_domain(domain), seed, cell.dirichlet_alpha)
    game = Negotiation(scenario, env)
    extra = {"arm": cell.arm, "study": cell.study, "buyer": label, "attempt": attempt,
             "prompt_hash": prompt_hash_of(seller, buyer)}
    agents = {"seller": seller, "buyer": buyer}
    try:
        while not game.done:
            await aplay_turn(game, agents[game.next_role])
    except AgentCallError as err:
        extra["cost_known"] = _cost_known(game, (seller, buyer))
        if not _seller_context_spent(err, game):
            message = f"{err.role} call at turn {len(game.turns) + 1}: {err.message}"
            return error_row(game, seller.spec, buyer.spec, extra, error_class=err.error_class,
                             error_message=message, retries=err.retries), []
        game.outcome = "no_deal"  # the engine's own no-deal, reached before its turn cap
    episode = game.record(seller.spec, buyer.spec)
    extra["cost_known"] = _cost_known(game, (seller, buyer))
    return episode_row(episode, extra), turn_rows(episode, extra)


def _seller_context_spent(err: AgentCallError, game: Negotiation) -> bool:
    """Whether the failure is the seller's context running out after its opening turn.

    An opening prompt that does not fit stays an error row: that seller cannot play at all.
    A buyer's context running out stays an error row too: it is not the seller's outcome.
    """
    return err.error_class == CONTEXT_SPENT and err.role == "seller" and len(game.turns) > 0


AgentFactory = Callable[[str, str], Any]


class AgentPool:
    """Agents of a run by ``(spec, role)``: built and started once, closed together.

    The pilot and the full cell share one pool, so a ``vllm:`` seller's server starts once.
    """

    def __init__(self, factory: AgentFactory):
        self.factory = factory
        self.agents: dict[tuple[str, str], Any] = {}
        """Every agent built, started or not."""
        self.started: set[tuple[str, str]] = set()
        """Agents that were started (played, or were ready to play) in this run."""
        self.remote: set[tuple[str, str]] = set()
        """Agents that played in other processes (Ray workers) for this run; never started here."""

    def peek(self, spec: str, role: str) -> Any:
        """The agent, built but not started (no server launched): for its settings and records."""
        key = (spec, role)
        if key not in self.agents:
            self.agents[key] = self.factory(spec, role)
        return self.agents[key]

    def used(self, spec: str, role: str) -> Any | None:
        """The agent if it played in this run (here or in a worker), else None."""
        key = (spec, role)
        return self.agents[key] if key in self.started or key in self.remote else None

    def played_remotely(self, spec: str, role: str, rejected: dict[str, str]) -> None:
        """Record that a worker's copy of the agent played, and what its provider refused."""
        agent = self.peek(spec, role)
        if getattr(agent, "record", None) is not None:
            agent.record.rejected.update(rejected)
        self.remote.add((spec, role))

    async def get(self, spec: str, role: str) -> Any:
        agent = self.peek(spec, role)
        if (spec, role) not in self.started:
            if hasattr(agent, "astart"):
                await agent.astart()
            self.started.add((spec, role))
        return agent

    async def aclose(self) -> None:
        for key in self.started:
            agent = self.agents[key]
            if hasattr(agent, "aclose"):
                await agent.aclose()

    async def __aenter__(self) -> AgentPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def run_cell(cell: CellSpec, store: ResultsStore, env: EnvConfig, agents: AgentPool | AgentFactory, *,
                   concurrency: int = 16, retry_errors: bool = False, buyers: list[str] | None = None,
                   on_progress: Callable[[CellProgress], None] | None = None) -> CellProgress:
    """Run (or resume) a cell into ``store``; returns the progress totals of this invocation.

    Args:
        cell: what to play.
        store: where finished episodes go (read first, to skip what is done).
        env: the protocol's environment constants for the evaluation phase.
        agents: a pool shared with other runs, or a ``(spec, role) -> agent`` factory (then the
            agents live for this call only). LLM agents get the protocol's settings there.
        concurrency: episodes in flight.
        retry_errors: rerun keys whose latest attempt is an error row.
        buyers: labels to run (default: all of the cell's; a failed pilot gate removes some).
        on_progress: called after every stored episode.
    """
    todo, progress = plan_cell(cell, store, buyers, retry_errors)
    if not todo:
        return progress
    pool = agents if isinstance(agents, AgentPool) else AgentPool(agents)
    try:
        await _run_todo(cell, store, env, pool, todo, concurrency, progress, on_progress)
    finally:
        if pool is not agents:
            await pool.aclose()
    return progress


def plan_cell(cell: CellSpec, store: ResultsStore, buyers: list[str] | None,
              retry_errors: bool) -> tuple[list[tuple[Key, int]], CellProgress]:
    """What a (re)run of ``cell`` must play, in run order, and its progress totals (the resume
    rule every backend follows: ``ResultsStore.plan``)."""
    todo, counts = store.plan(cell.keys(buyers), retry_errors=retry_errors)
    return todo, CellProgress(total=len(todo), skipped=counts["done"] + counts["errors_kept"])


async def _run_todo(cell: CellSpec, store: ResultsStore, env: EnvConfig, pool: AgentPool,
                    todo: list[tuple[Key, int]], concurrency: int, progress: CellProgress,
                    on_progress: Callable[[CellProgress], None] | None) -> None:
    seller = await pool.get(cell.seller, "seller")
    buyer_agents = {label: await pool.get(cell.buyers[label], "buyer") for label in sorted({k[3] for k, _ in todo})}
    queue: asyncio.Queue[tuple[Key, int]] = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            key, attempt = queue.get_nowait()
            row, turns = await play_episode(key, attempt, cell, seller, buyer_agents[key[3]], env)
            await asyncio.to_thread(store.write, key, attempt, row, turns)
            progress.add(row)
            if on_progress is not None:
                on_progress(progress)

    try:
        # A TaskGroup cancels the other workers when one fails (a bug), so none outlives the agents.
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(concurrency, len(todo)))):
                group.create_task(worker())
    except ExceptionGroup as group_error:
        raise group_error.exceptions[0] from group_error
