"""Scripted agents: deterministic given the episode's sample seed, for either role.

Personas (``scripted:<persona>?key=value``):

- ``boulware`` / ``conceder`` / ``linear``: time-dependent concession. The target utility
  falls from ``start`` to ``floor`` as ``1 - τ^(1/e)`` over the rounds (``e`` < 1 concedes late,
  Boulware; ``e`` > 1 early, Conceder; defaults 0.2, 2.0 and 1.0). The agent offers the
  contract at its target that concedes its least important terms first, and accepts when the
  ledger's own ``Ũ`` reaches the target, only after a counterpart turn (never its own offer).
- ``titfortat``: behaviour-dependent. The target starts at ``start`` and drops by ``delta`` times
  the concession the counterpart has made so far (measured in own ``Ũ``), never below ``floor``.
- ``fixed``: one offer at ``target`` (default 0.8), restated every turn until accepted.
- every persona: ``readable=1`` accepts only after a counterpart turn whose action could be read
  (a bad parse is no offer: the table is still the agent's own); the default ``0`` accepts after
  any counterpart turn, as the demo study froze it.

Each agent sees only its own view: its weights, preferred levels, the prose it was shown and
the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from negotiation.agents._offers import changed_terms, counterpart_levels, offer_at_target
from negotiation.agents._prose import render_accept, render_counter, turn_rng
from negotiation.agents._spec import AgentSpec
from negotiation.env import Reply, Role, View, u_tilde
from negotiation.errors import ConfigError


def _progress(view: View) -> float:
    """τ in [0, 1]: 0 at the party's first round, 1 at its last."""
    rounds = view.max_turns // 2
    return min(1.0, (view.round - 1) / max(1, rounds - 1))


@dataclass(frozen=True)
class TimeConcession:
    e: float
    start: float = 1.0
    floor: float = 0.5

    def target(self, view: View) -> float:
        return self.start - (self.start - self.floor) * _progress(view) ** (1.0 / self.e)


@dataclass(frozen=True)
class TitForTat:
    start: float = 0.95
    floor: float = 0.5
    delta: float = 1.0
    drift: float = 0.1
    """Small time-dependent concession so two hard-liners do not deadlock."""

    def target(self, view: View) -> float:
        opp = [m.ledger_after for m in view.history if m.role != view.role]
        moved = 0.0
        if len(opp) >= 2:
            first = u_tilde(view.domain, view.prefs, opp[0])
            latest = u_tilde(view.domain, view.prefs, opp[-1])
            moved = max(0.0, latest - first)
        return max(self.floor, self.start - self.delta * moved - self.drift * _progress(view))


@dataclass(frozen=True)
class Fixed:
    level: float = 0.8

    def target(self, view: View) -> float:
        return self.level


def _counterpart_offered(view: View, readable: bool) -> bool:
    """Whether the table is on offer from the counterpart: its last turn was the last turn played
    and, with ``readable``, its action could be read. After an unreadable turn the table is still
    this agent's own standing offer; accepting it closes a deal the counterpart never made
    (docs/environment.md). Without ``readable`` any counterpart turn counts (the demo's frozen rule)."""
    if not view.history or view.history[-1].role == view.role:
        return False
    return not readable or view.history[-1].ok is not False


class ScriptedAgent:
    """A scripted negotiator speaking templated prose plus the JSON action."""

    blocking = False

    def __init__(self, spec: str, role: Role, strategy: Any, *, holds: bool = False, readable: bool = False):
        self.spec = spec
        self.role = role
        self.strategy = strategy
        self.holds = holds
        self.readable = readable

    def respond(self, view: View) -> Reply:
        rng = turn_rng(view.sample_seed, view.turn, 0 if view.role == "seller" else 1)
        target = self.strategy.target(view)
        if view.ledger and _counterpart_offered(view, self.readable):
            if u_tilde(view.domain, view.prefs, view.ledger) >= target - 1e-9:
                return Reply(render_accept(rng))
        asked = {} if self.holds else counterpart_levels(view.history, view.role)
        offer = offer_at_target(view.domain, view.prefs, target, asked)
        terms = changed_terms(offer, view.ledger)
        if not terms:  # the ledger already is our offer; restate it rather than accept our own
            terms = list(offer.items())
        return Reply(render_counter(view.domain, view.role, terms, rng,
                                    opening=view.turn <= 2, holding=self.holds and view.turn > 2))


_DEFAULT_E = {"boulware": 0.2, "conceder": 2.0, "linear": 1.0}
_OPTIONS = {**{p: ("e", "start", "floor", "readable") for p in _DEFAULT_E},
            "titfortat": ("start", "floor", "delta", "drift", "readable"), "fixed": ("target", "readable")}


def make_scripted(spec: AgentSpec, role: Role) -> ScriptedAgent:
    """Factory for ``scripted:<persona>`` specs (see module docstring for options)."""
    persona = spec.target
    if persona in _OPTIONS:
        spec.check_known(_OPTIONS[persona])
    share = {"lo": 0.0, "hi": 1.0}  # utilities and fractions of the range
    floor = spec.option("floor", 0.5, float, **share)
    readable = bool(spec.option("readable", 0, int, lo=0, hi=1))
    if persona in _DEFAULT_E:
        e = spec.option("e", _DEFAULT_E[persona], float, lo=0, hi=1000, lo_open=True)
        strategy: Any = TimeConcession(e, spec.option("start", 1.0, float, **share), floor)
        return ScriptedAgent(spec.text, role, strategy, readable=readable)
    if persona == "titfortat":
        strategy = TitForTat(spec.option("start", 0.95, float, **share), floor,
                             spec.option("delta", 1.0, float, lo=0, hi=1000), spec.option("drift", 0.1, float, **share))
        return ScriptedAgent(spec.text, role, strategy, readable=readable)
    if persona == "fixed":
        return ScriptedAgent(spec.text, role, Fixed(spec.option("target", 0.8, float, **share)), holds=True,
                             readable=readable)
    known = ", ".join(sorted([*_DEFAULT_E, "titfortat", "fixed"]))
    raise ConfigError(f"agent spec {spec.text!r}:persona: unknown {persona!r}; known: {known}")
