"""Seeded, varied prose templates that speak the terms a message names."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import numpy as np

from negotiation.env import Domain, Role

_WORD = 1 << 32


def turn_rng(sample_seed: int, turn: int, salt: int) -> np.random.Generator:
    """``numpy.random.default_rng([sample_seed, turn, salt])``, a turn's prose stream.

    When each word fits 32 bits numpy coerces that list to exactly this uint32 array, so the
    generator is the same; handing it the array skips coercing three Python ints one by one.
    """
    if 0 <= sample_seed < _WORD and 0 <= turn < _WORD and 0 <= salt < _WORD:
        entropy = np.array((sample_seed, turn, salt), dtype=np.uint32)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
    return np.random.default_rng([sample_seed, turn, salt])

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


# Per domain, what a phrase needs of each term: (kind, spoken name, unit, unit for a value of 1),
# and a memo of spoken terms: (name, type of value, value) -> (phrase, JSON term object).
_Parts = dict[str, tuple[str, str, str, str]]
_Spoken = dict[tuple[str, type, Any], tuple[str, str]]
_PHRASE_PARTS: dict[int, tuple[Domain, _Parts, _Spoken]] = {}
_MAX_SPOKEN = 4096
"""Spoken terms memoized per domain; the memo starts over when full."""


def _domain_prose(domain: Domain) -> tuple[Domain, _Parts, _Spoken]:
    """Built once per domain (every message speaks several terms); keyed by identity, the entry
    holds the domain so an id is never reused."""
    hit = _PHRASE_PARTS.get(id(domain))
    if hit is not None and hit[0] is domain:
        return hit
    parts = {}
    for term in domain.terms:
        unit = term.unit or ""
        singular = unit[:-1] if unit.endswith("s") and unit.isalpha() else unit  # "1 day", not "1 days"
        parts[term.name] = (term.kind, humanize(term.name), unit, singular)
    entry = _PHRASE_PARTS[id(domain)] = (domain, parts, {})
    return entry


def _phrase_parts(domain: Domain) -> _Parts:
    return _domain_prose(domain)[1]


def term_phrase(domain: Domain, name: str, value: Any) -> str:
    """How a message speaks one term, e.g. ``price at 42 $k`` or ``the Premium interior``."""
    return _phrase(_phrase_parts(domain), name, value)


def _phrase(parts: dict[str, tuple[str, str, str, str]], name: str, value: Any) -> str:
    part = parts.get(name)
    if part is None:
        return f"{humanize(name)} of {value}"
    kind, human, unit, singular = part
    if kind == "continuous":
        return f"{human} at {value} {singular if value == 1 else unit}"
    if kind == "binary":
        return f"{human} included" if value is True else f"no {human}"
    if isinstance(value, str) and value.casefold() == "none":
        return f"no {human}"
    return f"the {value} {human}"


def _join(phrases: Sequence[str]) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]


_JSON_STRING = json.encoder.encode_basestring_ascii  # what json.dumps writes for a str


def _json_scalar(value: Any) -> str | None:
    """``json.dumps(value)`` for the scalars offers hold (str, bool, int, finite float); None for
    anything else, which then goes through ``json.dumps`` whole."""
    kind = type(value)
    if kind is str:
        return _JSON_STRING(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return None


def _json_term(name: Any, value: Any) -> str | None:
    """``json.dumps({"name": name, "value": value})`` for a str name and a scalar value, else None."""
    scalar = _json_scalar(value)
    if scalar is None or type(name) is not str:
        return None
    return f'{{"name": {_JSON_STRING(name)}, "value": {scalar}}}'


def _json_action(action: str, items: Sequence[str], notes: str) -> str:
    return (f'{{"action": {_JSON_STRING(action)}, "terms": [{", ".join(items)}], '
            f'"notes": {_JSON_STRING(notes)}}}')


def action_json(action: str, terms: Sequence[tuple[str, Any]], notes: str = "") -> str:
    """The JSON action, exactly as ``json.dumps`` writes it (default separators, ASCII).

    Every scripted and policy turn writes one; building the common case from its pieces is
    several times faster than ``json.dumps`` of a fresh dict, with the same bytes (tested).
    """
    items = []
    for name, value in terms:
        item = _json_term(name, value)
        if item is None:
            payload = {"action": action, "terms": [{"name": n, "value": v} for n, v in terms], "notes": notes}
            return json.dumps(payload)
        items.append(item)
    return _json_action(action, items, notes)


def _spoken_key(name: Any, value: Any) -> tuple[str, type, Any] | None:
    """A memo key only equal terms share, or None: the value's type is part of it (``True == 1
    == 1.0`` as keys but are spoken apart), and a float zero (``-0.0 == 0.0``, written apart) or
    a non-finite float is not keyed, nor anything but a str name with a str, int, bool or float."""
    kind = type(value)
    if type(name) is not str or (kind is float and (not value or not math.isfinite(value))):
        return None
    if kind is str or kind is int or kind is bool or kind is float:
        return name, kind, value
    return None


def _spoken_terms(domain: Domain, terms: Sequence[tuple[str, Any]]) -> tuple[list[str], str]:
    """The phrases speaking ``terms`` and their COUNTER action: what ``term_phrase`` and
    ``action_json`` give, memoized per domain (the same terms recur turn after turn)."""
    _, parts, spoken = _domain_prose(domain)
    phrases, items = [], []
    for name, value in terms:
        key = _spoken_key(name, value)
        hit = spoken.get(key) if key is not None else None
        if hit is None:
            hit = (_phrase(parts, name, value), _json_term(name, value))
            if key is not None:
                if len(spoken) >= _MAX_SPOKEN:
                    spoken.clear()
                spoken[key] = hit
        phrases.append(hit[0])
        items.append(hit[1])
    action = _json_action("COUNTER", items, "") if None not in items else action_json("COUNTER", terms)
    return phrases, action


def render_counter(domain: Domain, role: Role, terms: Sequence[tuple[str, Any]],
                   rng: np.random.Generator, *, opening: bool, holding: bool = False) -> str:
    """Two or three sentences naming ``terms``, then the COUNTER action."""
    lead = _OPEN[role][rng.integers(len(_OPEN[role]))] + " " if opening or rng.random() < 0.3 else ""
    phrases, action = _spoken_terms(domain, terms)
    verb = _HOLD[rng.integers(len(_HOLD))] if holding else _COUNTER_LEAD[rng.integers(len(_COUNTER_LEAD))]
    body = f"{verb} {_join(phrases)}."
    close = _CLOSE[rng.integers(len(_CLOSE))]
    return f"{lead}{body} {close}\n{action}"


def render_accept(rng: np.random.Generator) -> str:
    return f"{_ACCEPT[rng.integers(len(_ACCEPT))]}\n{action_json('ACCEPT', [])}"
