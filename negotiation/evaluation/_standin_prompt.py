"""Reading a rendered evaluation prompt back into a ``View``, for the stand-in server.

The stand-in plays a scripted agent behind an OpenAI-compatible endpoint, so it must know what
a model would know from the prompt alone: the domain (by its title), its own role, importances
(three decimals, renormalised) and preferred levels, the turn number and each past turn's prose
and table changes. The patterns are built from the template strings themselves, so a wording
change in ``negotiation.env._prompts`` cannot silently desynchronise the reader.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from negotiation.env import (Domain, Message, PROMPT_TEMPLATES, PartyPrefs, PromptTemplate, View,
                             counterpart_of, load_domains)

_FIELD = re.compile(r"\{(\w+)\}")


class PromptReadError(ValueError):
    """The prompt is not an evaluation scaffold this reader understands."""


@lru_cache(maxsize=None)
def _pattern(template_line: str, **fixed: str) -> re.Pattern[str]:
    """A regex matching one rendered template line; ``{x}`` becomes the group ``x``."""
    out, pos = [], 0
    for m in _FIELD.finditer(template_line):
        out.append(re.escape(template_line[pos:m.start()]))
        name = m.group(1)
        out.append(re.escape(fixed[name]) if name in fixed else f"(?P<{name}>.*?)")
        pos = m.end()
    out.append(re.escape(template_line[pos:]))
    return re.compile("^" + "".join(out) + "$")


@lru_cache(maxsize=None)
def _domains_by_title() -> dict[str, Domain]:
    return {d.title: d for d in load_domains().values()}


def _find_role_and_domain(system: str, t: PromptTemplate) -> tuple[str, Domain]:
    pattern = _pattern(t.role_intro)
    for line in system.splitlines():
        m = pattern.match(line)
        if m and m.group("role") in ("seller", "buyer"):
            title = m.group("title")
            domain = _domains_by_title().get(title)
            if domain is None:
                raise PromptReadError(f"system message: unknown domain title {title!r}")
            return m.group("role"), domain
    raise PromptReadError("system message: no role line")


def _read_prefs(system: str, role: str, domain: Domain, t: PromptTemplate) -> PartyPrefs:
    cont, level = _pattern(t.priority_continuous), _pattern(t.priority_level)
    weights: dict[str, float] = {}
    preferred: dict[str, Any] = {}
    for line in system.splitlines():
        m = level.match(line)
        if m and domain.has_term(m.group("name")):
            weights[m.group("name")] = float(m.group("weight"))
            preferred[m.group("name")] = json.loads(m.group("level"))
            continue
        m = cont.match(line)
        if m and domain.has_term(m.group("name")):
            weights[m.group("name")] = float(m.group("weight"))
    missing = [n for n in domain.term_names if n not in weights]
    if missing:
        raise PromptReadError(f"system message: no priority line for {missing}")
    total = sum(weights.values()) or 1.0
    ordered = {n: weights[n] / total for n in domain.term_names}
    return PartyPrefs(role, MappingProxyType(ordered), MappingProxyType(preferred))  # type: ignore[arg-type]


def _read_history(user: str, role: str, t: PromptTemplate) -> tuple[int, tuple[Message, ...], dict[str, Any]]:
    turn_re = _pattern(t.turn_line)
    line_re = _pattern(t.history_line)
    changes_re = _pattern(t.history_changes)
    other = t.speaker_other.format(counterpart=counterpart_of(role))
    turn, entries, ledger = None, [], {}
    for line in user.splitlines():
        if turn is None and (m := turn_re.match(line)):
            turn = int(m.group("turn"))
        elif (m := line_re.match(line)) and m.group("speaker") in (t.speaker_self, other):
            own = m.group("speaker") == t.speaker_self
            entries.append([int(m.group("turn")), role if own else counterpart_of(role), m.group("prose"), {}, True])
        elif entries and (m := changes_re.match(line)):
            entries[-1][3] = json.loads(m.group("changes"))
        elif entries and line == t.history_unread:
            entries[-1][4] = False
    if turn is None:
        raise PromptReadError("user message: no turn line")
    history = []
    for number, speaker, prose, changed, ok in entries:
        ledger = {**ledger, **changed}
        own = speaker == role
        history.append(Message(number, speaker, prose, MappingProxyType(dict(ledger)), None, ok if own else None))
    return turn, tuple(history), ledger


def read_view(messages: list[dict[str, Any]], *, sample_seed: int, max_turns: int) -> View:
    """The ``View`` an evaluation-scaffold prompt describes.

    Args:
        messages: the request's chat messages (system, then user).
        sample_seed: the request's ``seed``; the scripted reply depends on it and the prompt only.
        max_turns: the horizon the stand-in's scripted agent assumes (prompts never state it).
    """
    t = PROMPT_TEMPLATES["evaluation"]
    system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
    user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
    if not isinstance(system, str) or not isinstance(user, str):
        raise PromptReadError("messages: need a system and a user message with text content")
    role, domain = _find_role_and_domain(system, t)
    prefs = _read_prefs(system, role, domain, t)
    turn, history, ledger = _read_history(user, role, t)
    return View(role, domain, prefs, turn, max_turns, history,  # type: ignore[arg-type]
                MappingProxyType(ledger), "evaluation", int(sample_seed))
