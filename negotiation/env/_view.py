"""What an agent sees and returns: one interface for every seller and buyer."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Protocol, runtime_checkable

from negotiation.env._domain import Domain, Role
from negotiation.env._record import frozen_record
from negotiation.env._scenario import PartyPrefs


def ledger_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The terms ``after`` holds that ``before`` lacks or holds at another value, in ``after``'s
    order: what one turn changed on the ledger (the prompt's "Table changes", a scripted
    buyer's reading of the counterpart's wishes, the policy's features, the viewer's and the
    strategy table's concessions all read this one rule)."""
    # One look-up a term: a name ``before`` lacks reads as _ABSENT, which no value equals.
    held = before.get
    return {name: value for name, value in after.items() if held(name, _ABSENT) != value}


_ABSENT = object()


@frozen_record
class Message:
    """One past turn as the viewing party knows it."""

    turn: int
    role: Role
    prose: str
    """What the counterpart read (the message minus its JSON)."""
    ledger_after: Mapping[str, Any]
    raw: str | None
    """The full text, only for the viewer's own turns (the counterpart's JSON is never shown)."""
    ok: bool | None
    """Whether the turn's action could be read, for either party's turns. Of the counterpart's
    turns a party learns only this bit (never the JSON): that the turn put nothing on the table,
    as an unchanged table shows a reader. Scripted agents accept only after a readable turn."""


@frozen_record
class View:
    """A party's own view of the negotiation before it speaks: never the other's preferences."""

    role: Role
    domain: Domain
    prefs: PartyPrefs
    turn: int
    """1-based number of the turn about to be played (the seller plays odd turns)."""
    max_turns: int
    """The cap, known to the engine; prompts must not state it (paper §3)."""
    history: tuple[Message, ...]
    ledger: Mapping[str, Any]
    """Current ledger: every term named so far, last value wins."""
    phase: str
    """``evaluation`` or ``training``."""
    sample_seed: int
    """Seed for any randomness in the reply (prose templates, sampling)."""

    @property
    def round(self) -> int:
        return (self.turn + 1) // 2


@frozen_record
class Reply:
    """An agent's message and what it cost."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    retries: int = 0
    empty: str = ""
    """Why the provider sent no text, as ``provider_empty:<reason>`` (``length``, ``tool_call``,
    ``refusal``, ...), after its retries; empty when the text is the model's own. The turn is
    played as the empty move it is, and its record's ``error`` says the provider produced nothing."""


@runtime_checkable
class Agent(Protocol):
    """Every seller and buyer: given the role's view, return the message text."""

    spec: str

    def respond(self, view: View) -> Reply: ...


async def arespond(agent: Any, view: View) -> Reply:
    """Await an agent's reply: its own ``arespond`` if it has one, else ``respond`` in a thread
    only when it declares itself blocking, else inline (scripted agents are instant)."""
    native = getattr(agent, "arespond", None)
    if native is not None:
        return await native(view)
    if getattr(agent, "blocking", False):
        return await asyncio.to_thread(agent.respond, view)
    return agent.respond(view)
