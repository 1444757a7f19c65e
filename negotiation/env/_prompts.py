"""Prompt templates: the evaluation scaffold and the training-prompt variant, as versioned data.

Both variants open with the same system message: the role and domain description, each term
with the role's own description, the party's private importances and preferred levels (never
the other's), the reservation sentence and the format instruction. No turn cap is stated.

- ``evaluation`` re-renders one user message on every turn: the turn number, the phase
  instruction (the seller's conversational opening at turn 1; from ``converge_from_turn`` on,
  both parties are told to converge), the history (each turn's prose and what it changed on the
  table), the current table and the format reminder.
- ``training`` grows like a chat: after the opening instruction, the counterpart's prose alone
  arrives as a user message and the party's own raw messages are its assistant messages
  (paper, Appendix A), so it shows no turn numbers, no table and no phase instruction after
  turn 1.

Every template is a frozen pydantic model; its hash (``PromptTemplate.hash``) is recorded with
every episode, so any wording change shows up in the results. The lines the stand-in server
reads back (priorities, turn, history) are single-line templates: prose is whitespace-collapsed
by the parser, so one history entry never spans two lines.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from negotiation.env._domain import Term
from negotiation.env._scenario import prefers_high
from negotiation.env._view import View, ledger_changes

PromptVariant = Literal["evaluation", "training"]


class PromptTemplate(BaseModel):
    """The wording of one prompt variant; ``{field}`` marks a value filled in at render time."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    name: PromptVariant
    """Which variant this is."""
    version: int
    """Bumped on any wording change (the hash changes anyway; the version is for people)."""
    role_intro: str
    """First line: ``{role}``, ``{counterpart}``, ``{title}``."""
    terms_header: str
    """Heading of the term list."""
    term_continuous: str
    """``{name}``, ``{description}``, ``{lo}``, ``{hi}``, ``{unit}``."""
    term_categorical: str
    """``{name}``, ``{description}``, ``{levels}`` (JSON values joined by commas)."""
    term_binary: str
    """``{name}``, ``{description}``."""
    priorities_header: str
    """Heading of the private importances."""
    priority_continuous: str
    """``{name}``, ``{weight}`` (three decimals), ``{direction}``."""
    priority_level: str
    """``{name}``, ``{weight}``, ``{level}`` (the preferred level as JSON)."""
    direction_high: str
    """``{direction}`` when the party prefers high values."""
    direction_low: str
    """``{direction}`` when the party prefers low values."""
    reservation: str
    """The reservation sentence (paper §3)."""
    format_instruction: str
    """How a message is written: prose, then one JSON action."""
    turn_line: str
    """``{turn}``: evaluation prompts show the turn number."""
    opening: str
    """The seller's turn-1 instruction."""
    converge: str
    """Both parties, from the protocol's ``converge_from_turn``."""
    history_header: str
    """Heading of the conversation so far."""
    history_empty: str
    """Shown when nothing has been said yet."""
    history_line: str
    """``{turn}``, ``{speaker}``, ``{prose}``."""
    speaker_self: str
    """``{speaker}`` for the party's own turns."""
    speaker_other: str
    """``{speaker}`` for the counterpart's turns: ``{counterpart}``."""
    history_changes: str
    """``{changes}``: a JSON object of the terms the turn set (what the counterpart read)."""
    history_unread: str
    """Under an own turn whose action did not parse."""
    table_header: str
    """Heading of the current table."""
    table_empty: str
    """Shown when no term has been named."""
    table_line: str
    """``{name}``, ``{value}`` (JSON, plus the unit for continuous terms)."""
    format_reminder: str
    """Closing line of every evaluation user message."""
    empty_prose: str
    """Training variant: user message when the counterpart sent no words."""

    @property
    def hash(self) -> str:
        """``name@version:sha256[:12]`` of the full wording; recorded with every episode."""
        digest = hashlib.sha256(self.model_dump_json().encode("utf-8")).hexdigest()[:12]
        return f"{self.name}@{self.version}:{digest}"


_COMMON: dict[str, Any] = dict(
    role_intro="You are the {role} in this negotiation ({title}); the other party is the {counterpart}.",
    terms_header="The contract has these terms:",
    term_continuous="- {name}: {description} A number from {lo} to {hi} ({unit}).",
    term_categorical="- {name}: {description} One of: {levels}.",
    term_binary="- {name}: {description} true or false.",
    priorities_header="Your private priorities (the other party cannot see them; importances sum to 1):",
    priority_continuous="- {name}: importance {weight}; {direction}",
    priority_level="- {name}: importance {weight}; you prefer {level}",
    direction_high="higher values are better for you",
    direction_low="lower values are better for you",
    reservation="Any deal above your reservation value beats no deal.",
    format_instruction=(
        "Write every message as two or three sentences of natural conversation addressed to the "
        "other party, then one JSON action on its own line:\n"
        '{"action": "COUNTER" or "ACCEPT", "terms": [{"name": "<term>", "value": <value>}], '
        '"notes": "<private notes>"}\n'
        "COUNTER proposes values for the terms it names; they replace what is on the table. "
        "ACCEPT closes the deal on the terms currently on the table. The other party reads your "
        "sentences and the table, never your JSON. Use only the term names above, numbers in the "
        "unit shown, one of the listed levels, or true/false."
    ),
    turn_line="This is turn {turn} of the negotiation.",
    opening=("You speak first. Open the conversation naturally, and name only the terms your "
             "message talks about."),
    converge="The negotiation has gone on for a while: work toward an agreement you can both accept.",
    history_header="The conversation so far:",
    history_empty="Nothing has been said yet.",
    history_line="Turn {turn}, {speaker}: {prose}",
    speaker_self="you",
    speaker_other="the {counterpart}",
    history_changes="    Table changes: {changes}",
    history_unread="    (Your action in this turn could not be read, so it changed nothing.)",
    table_header="Terms on the table now:",
    table_empty="No terms are on the table yet.",
    table_line="- {name}: {value}",
    format_reminder="Reply with two or three sentences, then one JSON action on its own line.",
    empty_prose="(The other party sent no words.)",
)

PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    "evaluation": PromptTemplate(name="evaluation", version=1, **_COMMON),
    "training": PromptTemplate(name="training", version=1, **_COMMON),
}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def value_json(value: Any) -> str:
    """How a value appears in prompts and actions (JSON; non-JSON values as their repr string)."""
    kind = type(value)
    # Fast paths with json.dumps's exact output: this runs for every value on every turn.
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=repr)


def _term_line(t: PromptTemplate, term: Term, role: str) -> str:
    desc = term.description.for_role(role)  # type: ignore[arg-type]
    if term.kind == "continuous":
        lo, hi = term.range  # type: ignore[misc]
        return t.term_continuous.format(name=term.name, description=desc, lo=_num(lo), hi=_num(hi), unit=term.unit)
    if term.kind == "binary":
        return t.term_binary.format(name=term.name, description=desc)
    levels = ", ".join(value_json(v) for v in term.levels or ())
    return t.term_categorical.format(name=term.name, description=desc, levels=levels)


def _priority_line(t: PromptTemplate, view: View, term: Term) -> str:
    weight = f"{view.prefs.weights[term.name]:.3f}"
    if term.is_continuous:
        high = prefers_high(view.prefs, term)  # the party's own direction (a profile's, if any)
        return t.priority_continuous.format(name=term.name, weight=weight,
                                            direction=t.direction_high if high else t.direction_low)
    return t.priority_level.format(name=term.name, weight=weight, level=value_json(view.prefs.preferred[term.name]))


def counterpart_of(role: str) -> str:
    return "buyer" if role == "seller" else "seller"


_SYSTEM_CACHE: OrderedDict[tuple, str] = OrderedDict()
_SYSTEM_CACHE_SIZE = 512  # a few times the episodes in flight, times two roles
# Templates whose ids key the cache, held so that an id can never be reused by another object.
_SYSTEM_CACHE_TEMPLATES: dict[int, PromptTemplate] = {}


def render_system(view: View, template: PromptTemplate) -> str:
    """The system message: role, domain, terms, own priorities, reservation, format.

    It is the same on every turn of an episode, so it is cached by everything it depends on.
    """
    key = (id(template), view.domain.name, view.domain.version, view.role,
           tuple(view.prefs.weights.items()), tuple(view.prefs.preferred.items()))
    text = _SYSTEM_CACHE.get(key)
    if text is None:
        text = _render_system(view, template)
        _SYSTEM_CACHE_TEMPLATES[id(template)] = template
        _SYSTEM_CACHE[key] = text
        if len(_SYSTEM_CACHE) > _SYSTEM_CACHE_SIZE:
            _SYSTEM_CACHE.popitem(last=False)
    return text


def _render_system(view: View, template: PromptTemplate) -> str:
    t, domain = template, view.domain
    lines = [domain.description.for_role(view.role),
             "",
             t.role_intro.format(role=view.role, counterpart=counterpart_of(view.role), title=domain.title),
             "",
             t.terms_header,
             *(_term_line(t, term, view.role) for term in domain.terms),
             "",
             t.priorities_header,
             *(_priority_line(t, view, term) for term in domain.terms),
             "",
             t.reservation,
             "",
             t.format_instruction]
    return "\n".join(lines)


def _history_lines(view: View, t: PromptTemplate) -> list[str]:
    if not view.history:
        return [t.history_empty]
    other = t.speaker_other.format(counterpart=counterpart_of(view.role))
    lines: list[str] = []
    before: dict[str, Any] = {}
    for msg in view.history:
        own = msg.role == view.role
        lines.append(t.history_line.format(turn=msg.turn, speaker=t.speaker_self if own else other, prose=msg.prose))
        changed = ledger_changes(before, msg.ledger_after)
        if changed:
            lines.append(t.history_changes.format(changes=value_json(changed)))
        if own and msg.ok is False:
            lines.append(t.history_unread)
        before = dict(msg.ledger_after)
    return lines


def _table_lines(view: View, t: PromptTemplate) -> list[str]:
    if not view.ledger:
        return [t.table_empty]
    lines = []
    for name, value in view.ledger.items():
        shown = value_json(value)
        if view.domain.has_term(name) and view.domain.term(name).is_continuous:
            shown = f"{shown} {view.domain.term(name).unit}"
        lines.append(t.table_line.format(name=name, value=shown))
    return lines


def phase_lines(view: View, template: PromptTemplate, converge_from_turn: int) -> list[str]:
    """The phase instruction of this turn, if any."""
    lines = []
    if view.turn == 1 and view.role == "seller":
        lines.append(template.opening)
    if view.turn >= converge_from_turn:
        lines.append(template.converge)
    return lines


def render_evaluation_user(view: View, template: PromptTemplate, converge_from_turn: int) -> str:
    """The evaluation scaffold's user message, re-rendered on every turn."""
    t = template
    parts = [t.turn_line.format(turn=view.turn), *phase_lines(view, t, converge_from_turn), "",
             t.history_header, *_history_lines(view, t), "",
             t.table_header, *_table_lines(view, t), "",
             t.format_reminder]
    return "\n".join(parts)


def _training_messages(view: View, t: PromptTemplate, system: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    if view.role == "seller":
        messages.append({"role": "user", "content": t.opening})
    for msg in view.history:
        if msg.role == view.role:
            messages.append({"role": "assistant", "content": msg.raw or ""})
        else:
            messages.append({"role": "user", "content": msg.prose or t.empty_prose})
    return messages


def render_messages(view: View, template: PromptTemplate | str = "evaluation", *,
                    converge_from_turn: int | None = None) -> list[dict[str, str]]:
    """Chat messages for the party about to speak.

    Args:
        view: the party's own view (never the other's preferences).
        template: a ``PromptTemplate`` or the name of one in ``PROMPT_TEMPLATES``.
        converge_from_turn: the protocol's turn from which prompts say to converge (required by
            the evaluation scaffold; the training variant has no phase instruction after turn 1).
    """
    t = PROMPT_TEMPLATES[template] if isinstance(template, str) else template
    system = render_system(view, t)
    if t.name == "training":
        return _training_messages(view, t, system)
    if converge_from_turn is None:
        raise ValueError("the evaluation scaffold needs converge_from_turn (protocol environment)")
    return [{"role": "system", "content": system},
            {"role": "user", "content": render_evaluation_user(view, t, converge_from_turn)}]


def seller_training_messages(view: View) -> list[dict[str, str]]:
    """The training-prompt variant (a NeMo-RL prompt builder: ``view -> messages``)."""
    return render_messages(view, "training")


def prompt_hash(template: PromptTemplate | str = "evaluation") -> str:
    """The recorded hash of a template (or of a named one)."""
    return (PROMPT_TEMPLATES[template] if isinstance(template, str) else template).hash
