"""Seeded, varied prose templates that speak the terms a message names."""

from __future__ import annotations

import json
from typing import Any, Sequence

from negotiation.agents._turn_rng import TurnRandom
from negotiation.env import Domain, Role

_OPEN = {
    "seller": ("Thanks for your interest in this deal.", "Good to meet you, and thanks for reaching out.",
               "I'm glad we're talking about this.", "Happy to work something out with you."),
    "buyer": ("Thanks for the proposal.", "I appreciate you laying that out.",
              "Thanks, that helps me see where you stand.", "I've looked at what you sent."),
}
_COUNTER_LEAD = ("Here is what I can do:", "My proposal is", "I could work with", "Let me suggest",
                 "What would work for me is", "How about")
_CLOSE = ("Let me know what you think.", "I think that is a fair middle ground.",
          "I hope we can close on this.", "That keeps us moving toward a deal.",
          "Tell me if any of this is a problem for you.")
_ACCEPT = ("That works for me, we have a deal.", "Agreed, let's close on the current terms.",
           "I can accept that. Deal.", "Good, I accept the terms as they stand.")
_HOLD = ("I have to hold my position on", "I can't move further on", "I still need")


def humanize(name: str) -> str:
    return name.replace("_", " ")


def term_phrase(domain: Domain, name: str, value: Any) -> str:
    """How a message speaks one term, e.g. ``price at 42 $k`` or ``the Premium interior``."""
    if not domain.has_term(name):
        return f"{humanize(name)} of {value}"
    term = domain.term(name)
    if term.kind == "continuous":
        unit = term.unit or ""
        if value == 1 and unit.endswith("s") and unit.isalpha():
            unit = unit[:-1]  # "1 day", not "1 days"
        return f"{humanize(name)} at {value} {unit}"
    if term.kind == "binary":
        return f"{humanize(name)} included" if value is True else f"no {humanize(name)}"
    if isinstance(value, str) and value.casefold() == "none":
        return f"no {humanize(name)}"
    return f"the {value} {humanize(name)}"


def _join(phrases: Sequence[str]) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]


def action_json(action: str, terms: Sequence[tuple[str, Any]], notes: str = "") -> str:
    payload = {"action": action, "terms": [{"name": n, "value": v} for n, v in terms], "notes": notes}
    return json.dumps(payload)


def render_counter(domain: Domain, role: Role, terms: Sequence[tuple[str, Any]],
                   rng: TurnRandom, *, opening: bool, holding: bool = False) -> str:
    """Two or three sentences naming ``terms``, then the COUNTER action."""
    lead = _OPEN[role][rng.integers(len(_OPEN[role]))] + " " if opening or rng.random() < 0.3 else ""
    phrases = [term_phrase(domain, n, v) for n, v in terms]
    verb = _HOLD[rng.integers(len(_HOLD))] if holding else _COUNTER_LEAD[rng.integers(len(_COUNTER_LEAD))]
    body = f"{verb} {_join(phrases)}."
    close = _CLOSE[rng.integers(len(_CLOSE))]
    return f"{lead}{body} {close}\n{action_json('COUNTER', terms)}"


def render_accept(rng: TurnRandom) -> str:
    return f"{_ACCEPT[rng.integers(len(_ACCEPT))]}\n{action_json('ACCEPT', [])}"
