"""ANAC agents as parties: ``negmas:<AgentName>`` seats a NegMAS SAO negotiator as seller or buyer.

The negotiator is one of ``negmas_genius_agents`` (Python reimplementations of the ANAC 2010-2019
agents, the ``anac`` extra; its authors say they were ported from Java with AI assistance and may
not behave exactly as the originals). It plays with its own side's utility function, the one
``nego domain export`` writes (``env._genius.party_ufun``), over a grid of ``levels`` values per
continuous term (``_negmas_table``). Each of its turns:

- when the counterpart's last turn could be read and the ledger names every term, the ledger is
  the offer: ``respond_`` sees it as the state's ``current_offer``, and ACCEPT becomes the
  scripted personas' accept; an unreadable turn is no offer (the table is still the agent's own
  standing offer), as for scripted agents with ``readable=1``;
- otherwise, or on a rejection, ``propose_`` gives its offer, spoken as a scripted counter of the
  terms it changes on the ledger.

Time is the round over the cap as NegMAS counts it: step ``round - 1`` of ``max_turns / 2``.
Randomness: the agents draw from the module ``random``, seeded before every call from
``turn_seed(sample_seed, turn, role)`` (and restored after), so an episode repeats exactly.
A negotiator is one episode's: it is rebuilt and replayed from the view's history whenever the
view does not continue the one it last played (concurrent episodes, a pool's fresh start);
replaying the same seeded calls gives the same state. A call that raises, returns no offer, ends
the negotiation (the text protocol has no walk-away) or takes longer than ``timeout`` seconds
ends the episode as an error row (``AgentCallError``); a call that never returns cannot be cut
short in-process.

Options: ``levels`` (grid values per continuous term, default 5), ``timeout`` (seconds per call,
default 10). Most of an episode's time is the agent sorting its outcome space when the episode
starts (used_car: 540,000 outcomes at 5 levels, 69,984 at 3), so ``levels=3`` plays about ten
times faster (``benchmarks/anac.py``) at a coarser grid.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator

from negotiation.agents._kinds import AgentKind, register_kind
from negotiation.agents._negmas_table import PARTNER, ledger_outcome, make_nmi, outcome_contract, own_ufun, sao_state
from negotiation.agents._offers import changed_terms
from negotiation.agents._prose import render_accept, render_counter, turn_rng
from negotiation.agents._spec import AgentSpec
from negotiation.env import EnvConfig, Message, Reply, Role, View
from negotiation.errors import ConfigError

__all__ = ["NegmasAgent", "anac_classes", "check_negmas_agent", "make_negmas", "plain_env", "seeded_random"]


@contextmanager
def seeded_random(seed: int, turn: int, role: str) -> Iterator[None]:
    """The module ``random`` seeded from ``turn_seed(seed, turn, role)`` inside, restored after:
    the one seeding of an ANAC agent's calls (the agent kind's and the peer check's alike)."""
    from negotiation.agents._llm_settings import turn_seed

    saved = random.getstate()
    random.seed(turn_seed(seed, turn, role))
    try:
        yield
    finally:
        random.setstate(saved)


def plain_env(rounds: int) -> EnvConfig:
    """Offers-only rules over ``rounds`` rounds (no format or length penalty, ACCEPT ignores
    attached terms): what the agent check and the peer check play."""
    return EnvConfig(max_rounds=rounds, no_deal_penalty=0.3, g_fmt=0.0, g_len=0.0, t_soft=float(rounds),
                     accept_applies_terms=False)


def anac_classes() -> dict[str, tuple[int | None, type]]:
    """Every negotiator ``negmas_genius_agents`` exports, by name: ``(ANAC year or None, class)``."""
    import importlib

    import negmas_genius_agents as package

    years: dict[str, int] = {}
    for year in range(2010, 2020):
        module = importlib.import_module(f"negmas_genius_agents.negotiators.anac.y{year}")
        years.update({name: year for name in module.__all__})
    from negmas.sao import SAONegotiator

    return {name: (years.get(name), getattr(package, name)) for name in package.__all__
            if isinstance(getattr(package, name), type) and issubclass(getattr(package, name), SAONegotiator)}


class _Session:
    """One episode's negotiator, and the history it has played up to."""

    def __init__(self, agent: NegmasAgent, view: View):
        self.domain = view.domain
        self.ufun = own_ufun(view.domain, view.prefs, agent.levels)
        self.space = self.ufun.outcome_space
        self.rounds = view.max_turns // 2
        self.nmi, self.table = make_nmi(self.space, self.rounds)
        self.negotiator = agent.call(0, view.sample_seed, "construct",
                                     lambda: agent.cls(name=agent.role, id=agent.role))
        agent.call(0, view.sample_seed, "join", lambda: self.negotiator.join(
            self.nmi, sao_state(1, self.rounds, None, agent.role), ufun=self.ufun, role=agent.role))
        self.table.state = sao_state(1, self.rounds, None, agent.role)
        agent.call(0, view.sample_seed, "on_negotiation_start",
                   lambda: self.negotiator._on_negotiation_start(self.table.state))
        self.history: tuple[Message, ...] = ()
        self.turn = 0


class NegmasAgent:
    """A NegMAS SAO negotiator speaking the scripted personas' prose plus the JSON action."""

    blocking = False  # its calls seed the module ``random``: they must not interleave in threads

    def __init__(self, spec: str, role: Role, cls: type, *, levels: int = 5, timeout_s: float = 10.0):
        self.spec, self.role, self.cls = spec, role, cls
        self.levels, self.timeout_s = levels, timeout_s
        self._sessions: OrderedDict[tuple, _Session] = OrderedDict()

    def respond(self, view: View) -> Reply:
        session = self._session(view)
        accept, outcome = self._act(session, view.turn, view.sample_seed, view.history)
        session.history, session.turn = view.history, view.turn
        if view.history:  # keyed by the episode's first message, held by the entry (ids stay unique)
            key = (id(view.history[0]), id(view.prefs), view.sample_seed)
            self._sessions[key] = session
            self._sessions.move_to_end(key)
            if len(self._sessions) > 512:
                self._sessions.popitem(last=False)
        rng = turn_rng(view.sample_seed, view.turn, 0 if view.role == "seller" else 1)
        if accept:
            return Reply(render_accept(rng))
        contract = outcome_contract(view.domain, outcome)
        if contract is None:
            self._fail(view.turn, "NegotiatorBadOffer", f"proposed {outcome!r}, not an outcome of the domain")
        terms = changed_terms(contract, view.ledger) or list(contract.items())  # restate rather than accept
        return Reply(render_counter(view.domain, view.role, terms, rng, opening=view.turn <= 2))

    def _session(self, view: View) -> _Session:
        """The negotiator that played this episode up to the view, else a new one replayed to it."""
        if view.history:
            hit = self._sessions.get((id(view.history[0]), id(view.prefs), view.sample_seed))
            if hit is not None and hit.turn + 2 == view.turn and len(hit.history) < len(view.history) \
                    and all(a is b for a, b in zip(hit.history, view.history)):
                return hit
        session = _Session(self, view)
        for k, message in enumerate(view.history):  # replay its own past turns, same calls, same seeds
            if message.role == self.role:
                self._act(session, message.turn, view.sample_seed, view.history[:k])
        return session

    def _act(self, session: _Session, turn: int, seed: int, history: tuple[Message, ...]) -> tuple[bool, Any]:
        """``(accepted, proposed outcome)`` of the agent's turn ``turn`` after ``history``."""
        last = history[-1] if history else None
        offered = last is not None and last.role != self.role and last.ok is not False
        offer = ledger_outcome(session.domain, session.space, last.ledger_after) if last and offered else None
        state = sao_state((turn + 1) // 2, session.rounds, offer, self.role)
        session.table.state = state
        if offer is not None:
            from negmas.sao import ResponseType

            answer = self.call(turn, seed, "respond_", lambda: session.negotiator.respond_(state, PARTNER[self.role]))
            answer = getattr(answer, "response", answer)  # an ExtendedResponseType carries data too
            if answer == ResponseType.ACCEPT_OFFER:
                return True, None
            if answer in (ResponseType.END_NEGOTIATION, ResponseType.LEAVE, ResponseType.NO_RESPONSE):
                self._fail(turn, "NegotiatorEnded", f"answered {answer.name}: the text protocol has no walk-away")
        outcome = self.call(turn, seed, "propose_", lambda: session.negotiator.propose_(state, PARTNER[self.role]))
        outcome = getattr(outcome, "outcome", outcome)  # an ExtendedOutcome carries data too
        if outcome is None:
            self._fail(turn, "NegotiatorStalled", "proposed nothing (None)")
        return False, outcome

    def call(self, turn: int, seed: int, what: str, fn: Any) -> Any:
        """``fn()`` with the module ``random`` seeded for this turn (restored after), timed; a raise
        or an overrun is an ``AgentCallError`` naming the agent, the call and the turn."""
        start = time.perf_counter()
        try:
            with seeded_random(seed, turn, self.role):
                result = fn()
        except Exception as exc:  # any raise inside a foreign negotiator ends this episode, not the run
            self._fail(turn, type(exc).__name__, f"{what} raised: {exc}", exc)
        spent = time.perf_counter() - start
        if spent > self.timeout_s:
            self._fail(turn, "NegotiatorTimeout", f"{what} took {spent:.1f} s, over timeout={self.timeout_s:g} s")
        return result

    def _fail(self, turn: int, error_class: str, message: str, cause: BaseException | None = None) -> None:
        from negotiation.agents._llm_retry import AgentCallError
        from negotiation.agents._llm_transport import CallFailure

        failure = CallFailure(error_class, f"{self.spec} ({self.role}) at turn {turn}: {message}", transient=False)
        raise AgentCallError(failure, retries=0, spec=self.spec, role=self.role) from cause


def make_negmas(spec: AgentSpec, role: Role) -> NegmasAgent:
    """Factory for ``negmas:<AgentName>`` specs (see module docstring for options)."""
    spec.check_known(("levels", "timeout"))
    levels = spec.option("levels", 5, int, lo=2, hi=101)
    timeout_s = spec.option("timeout", 10.0, float, lo=0, hi=3600, lo_open=True)
    try:
        classes = anac_classes()
    except ImportError as exc:  # the anac extra is missing: say which install brings it
        from negotiation._install import install_hint

        raise ConfigError(f"agent spec {spec.text!r}: {install_hint(exc) or exc}") from exc
    if spec.target not in classes:
        import difflib

        close = difflib.get_close_matches(spec.target, sorted(classes), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"agent spec {spec.text!r}:agent: unknown NegMAS agent {spec.target!r}{hint}; "
                          "`nego agents list-anac` lists them")
    return NegmasAgent(spec.text, role, classes[spec.target][1], levels=levels, timeout_s=timeout_s)


def check_negmas_agent(name: str, domain: str = "used_car", seed: int = 0, rounds: int = 4,
                       levels: int = 2) -> str | None:
    """Why ``negmas:<name>`` cannot run, or None: it plays one episode of ``rounds`` rounds as buyer
    against ``scripted:boulware`` on ``domain`` twice, with fresh agents; an error row's reason, or
    transcripts that differ (its randomness escapes the per-turn seeding), say why."""
    from negotiation.agents._llm_retry import AgentCallError
    from negotiation.agents._spec import make_agent
    from negotiation.env import load_domain, make_scenario, run_episode

    env = plain_env(rounds)
    scenario = make_scenario(load_domain(domain), seed)
    transcripts = []
    for _ in range(2):
        buyer = make_agent(f"negmas:{name}?levels={levels}", "buyer")
        try:
            episode = run_episode(scenario, make_agent("scripted:boulware", "seller"), buyer, env)
        except AgentCallError as err:
            return f"{err.error_class}: {err.message}"
        transcripts.append([turn.raw for turn in episode.turns])
    if transcripts[0] != transcripts[1]:
        return "not repeatable: the same seed gave two transcripts"
    return None


register_kind(AgentKind("negmas", "negotiation.agents._negmas:make_negmas", "reference_seller"))
