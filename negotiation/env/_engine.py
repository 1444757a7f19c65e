"""The episode engine: the seller opens, the parties alternate, at most ``2 T`` turns.

``Negotiation`` is a state machine (``view`` -> agent -> ``apply``) so that one loop can drive
agents one at a time (``run_episode``), concurrently (``arun_episode``) or in batches of
episodes (the demo trainer). COUNTER terms overwrite a persistent ledger; ACCEPT closes the
episode on the current ledger (terms attached to it are applied first only when the config says
so, as in training); ACCEPT of an empty ledger is a malformed turn; the cap without an ACCEPT
is a no-deal. A malformed turn leaves the ledger unchanged, still delivers its prose and counts
in ``n_bad``; the counterpart's view records that it could not be read (never its raw text).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Mapping, Sequence

from negotiation.env._domain import Role
from negotiation.env._parse import ParsedTurn, parse_message, valid_text
from negotiation.env._record import frozen_record
from negotiation.env._scenario import Scenario
from negotiation.env._utility import Score, score_ledger, term_issues
from negotiation.env._view import Agent, Message, Reply, View, arespond

Outcome = Literal["deal", "no_deal"]
RECORD_VERSION = 1


@dataclass(frozen=True)
class EnvConfig:
    """Environment constants; a study's protocol supplies them (never retyped in code)."""

    max_rounds: int
    """T: rounds (one seller and one buyer turn each) before a no-deal."""
    no_deal_penalty: float
    """λ: the outcome term of a no-deal is ``-λ``."""
    g_fmt: float
    """Weight of the seller's malformed-turn fraction in Eq. 1."""
    g_len: float
    """Weight of the length penalty in Eq. 1."""
    t_soft: float
    """Soft budget in rounds (0.75 T in the paper)."""
    accept_applies_terms: bool
    """Training: terms attached to an ACCEPT are applied before closing. Evaluation: ignored."""
    phase: str = "evaluation"
    """Recorded with every episode."""

    @property
    def max_turns(self) -> int:
        return 2 * self.max_rounds


@frozen_record
class TurnRecord:
    """Everything that happened in one turn."""

    turn: int
    role: Role
    raw: str
    prose: str
    ok: bool
    action: str | None
    terms: tuple[tuple[str, Any], ...]
    error: str | None
    ledger_after: Mapping[str, Any]
    flags: Mapping[str, bool]
    n_off_schema: int
    n_invalid: int
    n_out_of_range: int
    reply: Reply = field(default_factory=lambda: Reply(""))


@frozen_record
class Episode:
    """One finished negotiation."""

    domain: str
    seed: int
    sample_seed: int
    seller: str
    buyer: str
    config: EnvConfig
    outcome: Outcome
    closed_by: Role | None
    accept_had_terms: bool
    final_ledger: Mapping[str, Any]
    seller_score: Score
    buyer_score: Score
    turns: tuple[TurnRecord, ...]

    @property
    def deal(self) -> bool:
        return self.outcome == "deal"

    @property
    def S(self) -> float:  # noqa: N802 - the paper's symbol
        """Outcome term of Eq. 1: seller Ũ on a deal, ``-λ`` on a no-deal."""
        return self.seller_score.u_tilde if self.deal else -self.config.no_deal_penalty

    @property
    def n_turns(self) -> int:
        return len(self.turns)

    @property
    def n_rounds(self) -> int:
        return rounds_of(self.n_turns)

    def n_bad(self, role: Role | None = None) -> int:
        return bad_turns(self.turns, role)

    def n_turns_of(self, role: Role) -> int:
        return sum(1 for t in self.turns if t.role == role)


def rounds_of(n_turns: int) -> int:
    """Rounds begun in ``n_turns`` turns (a round is a seller and a buyer turn)."""
    return math.ceil(n_turns / 2)


def bad_turns(turns: Sequence[TurnRecord], role: Role | None = None) -> int:
    """Malformed turns among ``turns`` (of ``role`` only, when given)."""
    return sum(1 for t in turns if not t.ok and (role is None or t.role == role))


class Negotiation:
    """One episode in progress."""

    def __init__(self, scenario: Scenario, config: EnvConfig, *, sample_seed: int | None = None):
        self.scenario = scenario
        self.config = config
        self.sample_seed = scenario.seed if sample_seed is None else int(sample_seed)
        self.ledger: dict[str, Any] = {}
        # The read-only copy of the ledger the last turn left: the turn's record and the next
        # view share it (the ledger changes only in ``apply``), one copy per turn instead of two.
        self._ledger_after: Mapping[str, Any] = MappingProxyType({})
        self.turns: list[TurnRecord] = []
        self.outcome: Outcome | None = None
        self.closed_by: Role | None = None
        self.accept_had_terms = False
        # Each party's history as it sees it, extended once per turn (building it anew for
        # every view made a T-round episode quadratic in T).
        self._seen: dict[Role, list[Message]] = {"seller": [], "buyer": []}

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def next_role(self) -> Role:
        return "seller" if len(self.turns) % 2 == 0 else "buyer"

    def view(self) -> View:
        """The view of the party about to speak."""
        role = self.next_role
        return View(role, self.scenario.domain, self.scenario.prefs(role), len(self.turns) + 1,
                    self.config.max_turns, tuple(self._seen[role]), self._ledger_after,
                    self.config.phase, self.sample_seed)

    def apply(self, reply: Reply | str, parsed: ParsedTurn | None = None) -> TurnRecord:
        """Play the next party's message (``parsed``: ``parse_message`` of it, done already)."""
        if self.done:
            raise RuntimeError("the episode is over")
        reply = Reply(reply) if isinstance(reply, str) else reply
        text = valid_text(reply.text)
        if text is not reply.text:  # the raw text must be storable too
            reply = dataclasses.replace(reply, text=text)
        role = self.next_role
        parsed = parse_message(text) if parsed is None else parsed
        ok, error = parsed.ok, parsed.error
        if ok and parsed.action == "COUNTER":
            self._write(parsed.terms)
        elif ok and parsed.action == "ACCEPT":
            ok, error = self._accept(parsed, role)
        if reply.empty and not ok:
            error = reply.empty  # the provider produced nothing: not the model's bad parse
        record = self._record(role, reply, parsed, ok, error)
        self.turns.append(record)
        other: Role = "buyer" if role == "seller" else "seller"
        self._seen[role].append(Message(record.turn, role, record.prose, record.ledger_after, record.raw, record.ok))
        self._seen[other].append(Message(record.turn, role, record.prose, record.ledger_after, None, record.ok))
        if not self.done and len(self.turns) >= self.config.max_turns:
            self.outcome = "no_deal"
        return record

    def _write(self, terms: tuple[tuple[str, Any], ...]) -> None:
        self.ledger.update(terms)  # in order: a later value for a name wins

    def _accept(self, parsed: ParsedTurn, role: Role) -> tuple[bool, str | None]:
        if parsed.terms:
            self.accept_had_terms = True
            if self.config.accept_applies_terms:
                self._write(parsed.terms)
        if not self.ledger:
            return False, "accept_empty_ledger"
        self.outcome, self.closed_by = "deal", role
        return True, None

    def _record(self, role: Role, reply: Reply, parsed: ParsedTurn, ok: bool, error: str | None) -> TurnRecord:
        off, inv, oor = term_issues(self.scenario.domain, parsed.terms)
        self._ledger_after = MappingProxyType(dict(self.ledger))
        return TurnRecord(len(self.turns) + 1, role, reply.text, parsed.prose, ok,
                          parsed.action if ok else None, parsed.terms, error,
                          self._ledger_after, MappingProxyType(parsed.flags),
                          off, inv, oor, reply)

    def record(self, seller: str, buyer: str) -> Episode:
        """The finished episode."""
        if not self.done:
            raise RuntimeError("the episode is still running")
        ledger = MappingProxyType(dict(self.ledger))
        return Episode(self.scenario.domain.name, self.scenario.seed, self.sample_seed, seller,
                       buyer, self.config, self.outcome, self.closed_by,  # type: ignore[arg-type]
                       self.accept_had_terms, ledger,
                       score_ledger(self.scenario, "seller", ledger),
                       score_ledger(self.scenario, "buyer", ledger), tuple(self.turns))


def run_episode(scenario: Scenario, seller: Agent, buyer: Agent, config: EnvConfig,
                *, sample_seed: int | None = None) -> Episode:
    """Play one episode to the end with synchronous agents."""
    game = Negotiation(scenario, config, sample_seed=sample_seed)
    agents = {"seller": seller, "buyer": buyer}
    while not game.done:
        game.apply(agents[game.next_role].respond(game.view()))
    return game.record(seller.spec, buyer.spec)


OFFLOAD_CHARS = 8192
"""Replies longer than this are parsed in a worker thread, off the event loop."""


async def aplay_turn(game: Negotiation, agent: Any) -> TurnRecord:
    """Ask ``agent`` (sync or async) for the next message of ``game`` and play it.

    A long reply is parsed in a worker thread so that the episodes in flight beside this one
    keep running (the parser is linear, but a megabyte still takes milliseconds).
    """
    reply = await arespond(agent, game.view())
    text = reply.text if isinstance(reply, Reply) else reply
    parsed = None
    if isinstance(text, str) and len(text) > OFFLOAD_CHARS:
        parsed = await asyncio.to_thread(parse_message, text)
    return game.apply(reply, parsed)


async def arun_episode(scenario: Scenario, seller: Any, buyer: Any, config: EnvConfig,
                       *, sample_seed: int | None = None) -> Episode:
    """Play one episode with agents that may be asynchronous (LLM endpoints)."""
    game = Negotiation(scenario, config, sample_seed=sample_seed)
    agents = {"seller": seller, "buyer": buyer}
    while not game.done:
        await aplay_turn(game, agents[game.next_role])
    return game.record(seller.spec, buyer.spec)
