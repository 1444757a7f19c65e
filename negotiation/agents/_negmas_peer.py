"""A peer's check: one pairing of two ANAC agents in our text protocol and in NegMAS's own ``SAOMechanism``.

``peer_check`` plays (a) our episode, ``negmas:<seller>`` against ``negmas:<buyer>`` through the
engine (``run_episode``, offers spoken in the scripted personas' prose and parsed back), and (b) an
``SAOMechanism`` with the same two negotiator classes, each party's ufun over the same grid
(``own_ufun``), aligned with our protocol where NegMAS allows it:

- the seller is added first, so it opens, and a NegMAS step is one of our rounds (``n_steps`` = the
  round cap): step ``s`` is the seller's turn ``2s + 1`` and the buyer's turn ``2s + 2``;
- every negotiator call is seeded as the agent kind seeds it (``turn_seed(sample_seed, turn, role)``
  around ``propose_``/``respond_``, turn 0 for construction, joining and the start), so the two
  runs draw the same random numbers;
- no time limit, so only the step count ends the negotiation, as the round cap ends ours.

Both outcomes are given as ``PeerOutcome``: the agreement as an outcome tuple (None for no deal),
each side's utility under its ufun, turns played, who accepted and every offer. Over 168 runs
(``docs/results/anac-peer-2026-12-04``) they were equal but for ``TIMED_OUT_OFFER``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from negotiation.agents._negmas import anac_classes, plain_env, seeded_random
from negotiation.agents._negmas_table import ledger_outcome, own_ufun
from negotiation.env import EnvConfig, load_domain, make_scenario, run_episode

__all__ = ["PeerCheck", "PeerOutcome", "TIMED_OUT_OFFER", "peer_check"]

TIMED_OUT_OFFER = ("NegMAS's trace records the last offer of a negotiation that runs out of steps as None "
                   "(state 'timedout'); ours records what was said. No one can answer that offer in either "
                   "protocol, so the check leaves it out of the comparison.")


@dataclass(frozen=True)
class PeerOutcome:
    """How one run of a pairing ended."""

    agreement: tuple | None  # the outcome agreed on (grid values), None for no deal
    seller_utility: float | None  # under the seller's ufun; None for no deal
    buyer_utility: float | None
    turns: int  # offers made plus the accepting turn
    accepted_by: str | None  # "seller" | "buyer" | None
    offers: tuple = ()  # every offer in order, as outcome tuples: where two runs part, not only how they end


@dataclass(frozen=True)
class PeerCheck:
    """Ours and NegMAS's outcome of one pairing on one scenario."""

    domain: str
    seed: int
    seller: str
    buyer: str
    ours: PeerOutcome
    negmas: PeerOutcome

    @property
    def match(self) -> bool:
        """Same agreement, utilities, turns, acceptor and offers, up to ``TIMED_OUT_OFFER``."""
        ours, theirs = self.ours, self.negmas
        if ours.agreement is None and theirs.agreement is None and theirs.offers[-1:] == (None,):
            ours, theirs = replace(ours, offers=ours.offers[:-1]), replace(theirs, offers=theirs.offers[:-1])
        return ours == theirs


def _outcome(agreement: tuple | None, ufuns: dict[str, Any], turns: int, accepted_by: str | None,
             offers: list) -> PeerOutcome:
    offers_ = tuple(tuple(o) if o is not None else None for o in offers)
    if agreement is None:
        return PeerOutcome(None, None, None, turns, None, offers_)
    return PeerOutcome(tuple(agreement), float(ufuns["seller"](agreement)), float(ufuns["buyer"](agreement)),
                       turns, accepted_by, offers_)


def _seeded_class(cls: type, role: str, sample_seed: int) -> type:
    """``cls`` with every call the agent kind seeds seeded the same way (and ``random`` restored)."""

    def seeded(turn_of, method):
        def call(self, *args, **kwargs):
            with seeded_random(sample_seed, turn_of(*args, **kwargs), role):
                return method(self, *args, **kwargs)
        return call

    offset = 1 if role == "seller" else 2  # step s is the seller's turn 2s + 1, the buyer's 2s + 2

    def turn(state, *_args, **_kwargs):
        return 2 * state.step + offset

    def start(*_args, **_kwargs):
        return 0

    return type(f"Seeded{cls.__name__}", (cls,), {
        "propose_": seeded(turn, cls.propose_), "respond_": seeded(turn, cls.respond_),
        "join": seeded(start, cls.join), "_on_negotiation_start": seeded(start, cls._on_negotiation_start)})


def _negmas_run(classes: dict[str, type], ufuns: dict[str, Any], rounds: int, sample_seed: int) -> PeerOutcome:
    """NegMAS's own run of the pairing, aligned with our protocol (module docstring)."""
    from negmas.sao import SAOMechanism

    space = ufuns["seller"].outcome_space
    mechanism = SAOMechanism(outcome_space=space, n_steps=rounds, time_limit=None)
    for role in ("seller", "buyer"):  # seller first: it opens
        cls = _seeded_class(classes[role], role, sample_seed)
        with seeded_random(sample_seed, 0, role):
            negotiator = cls(name=role, id=role)
        mechanism.add(negotiator, ufun=ufuns[role], role=role)
    mechanism.run()
    state = mechanism.state
    offers = [entry.offer for entry in mechanism.full_trace]
    if state.agreement is None:
        return _outcome(None, ufuns, len(offers), None, offers)
    accepted_by = "buyer" if state.current_proposer == "seller" else "seller"
    return _outcome(state.agreement, ufuns, len(offers) + 1, accepted_by, offers)


def peer_check(domain: str, seed: int, seller: str, buyer: str, *, levels: int = 2, rounds: int = 12,
               env: EnvConfig | None = None) -> PeerCheck:
    """Play ``negmas:<seller>`` against ``negmas:<buyer>`` on ``domain`` (scenario ``seed``) in our
    engine and in NegMAS's ``SAOMechanism``; both outcomes (``PeerCheck.match`` says if they agree).

    ``env`` defaults to the evaluation rules over ``rounds`` rounds (ACCEPT ignores attached terms).
    """
    from negotiation.agents._spec import make_agent

    env = env or plain_env(rounds)
    scenario = make_scenario(load_domain(domain), seed)
    ufuns = {role: own_ufun(scenario.domain, scenario.prefs(role), levels) for role in ("seller", "buyer")}
    episode = run_episode(scenario, make_agent(f"negmas:{seller}?levels={levels}", "seller"),
                          make_agent(f"negmas:{buyer}?levels={levels}", "buyer"), env)
    agreement = ledger_outcome(scenario.domain, ufuns["seller"].outcome_space, episode.final_ledger) \
        if episode.deal else None  # grid values: the ledger holds what the agents proposed
    space = ufuns["seller"].outcome_space
    offers = [ledger_outcome(scenario.domain, space, t.ledger_after) for t in episode.turns if t.action == "COUNTER"]
    ours = _outcome(agreement, ufuns, len(episode.turns), episode.closed_by if episode.deal else None, offers)
    classes = {role: anac_classes()[name][1] for role, name in (("seller", seller), ("buyer", buyer))}
    theirs = _negmas_run(classes, ufuns, env.max_rounds, episode.sample_seed)
    return PeerCheck(domain, seed, seller, buyer, ours, theirs)
