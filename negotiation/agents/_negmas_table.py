"""What a NegMAS negotiator sees of an episode: its outcome space, utility function and SAO state.

The negotiator is driven through its SAO API (``respond_`` / ``propose_``, what NegMAS's own
mechanism calls) with an ``SAOState`` built from the view; no ``SAOMechanism`` runs. NegMAS's
negotiator interface reads a few things from a mechanism (the state, the outcome space, random
outcomes): ``_Table`` gives exactly those, and any other request fails with a message naming it
(the episode becomes an error row, never a silent default).

Outcomes are tuples in term order: a categorical level as its text, a binary term as
``"true"``/``"false"``, a continuous term as a number of its grid (``negmas_space(levels=...)``),
as ``nego domain export`` writes them. The ledger becomes an outcome only when it names every
term with a readable value; a continuous value snaps to the nearest grid value (agents look
outcomes up in their enumerations).
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping

from negotiation.env import INVALID, Domain, PartyPrefs, Role, canonical_value, negmas_space, party_ufun

PARTNER = {"seller": "buyer", "buyer": "seller"}


class _Table:
    """The stand-in for a mechanism behind one negotiator's ``SAONMI``."""

    def __init__(self, space: Any, n_steps: int):
        self.outcome_space = space
        self.n_steps = n_steps
        self.state: Any = None
        self.history: list[Any] = []
        self.n_negotiators = 2
        self.negotiator_ids = ["seller", "buyer"]
        self.agent_ids = ["seller", "buyer"]
        self.agent_names = ["seller", "buyer"]

    def random_outcome(self) -> Any:
        # the module ``random`` is what the agents seed and draw from (``_negmas._seeded``)
        return tuple(issue.values[random.randrange(issue.cardinality)] for issue in self.outcome_space.issues)

    def random_outcomes(self, n: int = 1) -> list[Any]:
        return [self.random_outcome() for _ in range(n)]

    def discrete_outcomes(self, max_cardinality: int | float = float("inf")) -> list[Any]:
        return list(self.outcome_space.enumerate_or_sample(max_cardinality=max_cardinality))

    def discrete_outcome_space(self, levels: int = 10, max_cardinality: int | float = float("inf")) -> Any:
        return self.outcome_space  # already discrete: continuous terms are the agent's grid

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the text protocol's SAO stand-in has no {name!r} (no SAOMechanism runs)")


def make_nmi(space: Any, rounds: int) -> tuple[Any, _Table]:
    """An ``SAONMI`` over ``space`` for a negotiation of ``rounds`` steps, and its stand-in."""
    from negmas.sao import SAONMI

    table = _Table(space, rounds)
    inf = float("inf")
    nmi = SAONMI(id="text-protocol", n_outcomes=space.cardinality, outcome_space=space, shared_time_limit=inf,
                 shared_n_steps=rounds, private_time_limit=inf, private_n_steps=rounds, pend=0.0,
                 pend_per_second=0.0, step_time_limit=inf, negotiator_time_limit=inf, dynamic_entry=False,
                 max_n_negotiators=2, _mechanism=table)
    return nmi, table


def sao_state(round_: int, rounds: int, offer: tuple | None, role: Role) -> Any:
    """The SAO state at ``round_`` (1-based) of ``rounds``: step ``round_ - 1`` and NegMAS's relative
    time ``(step + 1) / (n_steps + 1)``, the time an ``SAOMechanism`` of ``rounds`` steps shows."""
    from negmas.sao import SAOState

    proposer = PARTNER[role] if offer is not None else None
    return SAOState(running=True, started=True, step=round_ - 1, relative_time=round_ / (rounds + 1),
                    current_offer=offer, current_proposer=proposer, current_proposer_agent=proposer,
                    last_negotiator=proposer, n_negotiators=2,
                    new_offers=[(proposer, offer)] if offer is not None else [])


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def ledger_outcome(domain: Domain, space: Any, ledger: Mapping[str, Any]) -> tuple | None:
    """The ledger as an outcome of ``space``, or None when a term is missing or unreadable."""
    values = []
    for term, issue in zip(domain.terms, space.issues):
        canon = canonical_value(term, ledger[term.name]) if term.name in ledger else INVALID
        if canon is INVALID:
            return None
        if term.is_continuous:
            values.append(min(issue.values, key=lambda grid: abs(grid - canon)))
        else:
            values.append(_text(canon))
    return tuple(values)


def outcome_contract(domain: Domain, outcome: Any) -> dict[str, Any] | None:
    """The full contract an outcome stands for (term name -> canonical value), or None when it is
    not an outcome of the domain (wrong length, a level no term has, a number that is not finite)."""
    if not isinstance(outcome, (tuple, list)) or len(outcome) != len(domain.terms):
        return None
    contract: dict[str, Any] = {}
    for term, value in zip(domain.terms, outcome):
        if term.kind == "binary":
            value = {"true": True, "false": False}.get(str(value).strip().lower(), INVALID)
        elif term.is_continuous:
            value = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) else INVALID
            value = int(value) if value is not INVALID and float(value).is_integer() else value
        canon = INVALID if value is INVALID else canonical_value(term, value)
        if canon is INVALID:
            return None
        contract[term.name] = value if term.is_continuous else canon
    return contract


def own_ufun(domain: Domain, prefs: PartyPrefs, levels: int) -> Any:
    """The party's NegMAS utility function over the grid space (``nego domain export``'s conversion)."""
    ufun, _ = party_ufun(domain, prefs, negmas_space(domain, levels))
    return ufun
