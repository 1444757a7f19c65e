"""The total parser: any text maps to a defined outcome and nothing raises.

A turn is prose plus one JSON action ``{"action": "COUNTER"|"ACCEPT", "terms": [{"name": ...,
"value": ...}], "notes": "..."}``. Rules, in order:

1. Code fences are dropped; every top-level JSON object in the text is decoded. Objects
   without an ``"action"`` key are ignored; if none has one, the turn fails (``no_action``).
2. ``action`` is matched case-insensitively; anything but COUNTER/ACCEPT fails
   (``unknown_action``). COUNTER mixed with ACCEPT fails (``mixed_actions``).
3. Several COUNTERs merge in order (a later value for a name wins); several ACCEPTs are one.
4. ``terms`` must be a list (absent means empty) of objects with a string ``name`` and a
   ``value``; anything else fails (``bad_terms``). A COUNTER must name at least one term
   (``empty_counter``).
5. The prose shown to the counterpart is the text with the JSON objects and fences removed.
6. Hostile text is bounded, never fatal: past ``_MAX_CHARS`` the turn fails (``too_long``),
   an object nested deeper than ``_MAX_DEPTH`` fails it (``too_deep``), so does text whose
   decoding would cost more than a few passes over it (``too_complex``); a number too large
   for a float decodes as an infinity, which the scorer counts as an invalid value.

Flags are computed whether or not the turn parsed: a JSON fragment left in the prose, an
unfilled ``[placeholder]``, a leaked chat-template tag.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import field
from typing import Any, Literal

from negotiation.env._record import frozen_record

Action = Literal["COUNTER", "ACCEPT"]

_FENCE = re.compile(r"```[a-zA-Z]*")
_PLACEHOLDER = re.compile(r"\[[A-Za-z][^\[\]\n]{2,60}\]")
_TEMPLATE_TAG = re.compile(
    r"<\|[a-z_]*\|?>|<\|?(?:turn|channel|start_of_turn|end_of_turn|im_start|im_end|eot_id)\|?>"
    r"|<(?:start|end)_of_turn>|\[/?INST\]|</?s>",
    re.IGNORECASE,
)
_JSON_LEAK = re.compile(r"[{}\[\]]|\"(?:action|terms|name|value)\"\s*:")
_SURROGATE = re.compile("[\ud800-\udfff]")
_OBJECT_START = re.compile(r'\{\s*(?:\}|"[^"\\]*(?:\\.[^"\\]*)*"\s*:)')  # `{}` or `{"key":` opens an object
_MAX_CHARS = 65_536
"""Characters of one message that are parsed; a longer message fails as ``too_long``."""
_MAX_DEPTH = 16
"""Deepest nesting of an action object (an ordinary one has 3)."""
_MAX_INT_DIGITS = 300
_WINDOW, _LOOKAHEAD = 256, 16
_WORK_FACTOR, _WORK_BASE, _ATTEMPT_COST = 4, 65_536, 64  # an attempt's overhead ~ 64 chars scanned
_FAILED, _TOO_DEEP = object(), object()


@frozen_record
class ParsedTurn:
    """What the parser made of one message."""

    ok: bool
    """Whether the turn parsed into a valid action."""
    action: Action | None
    """COUNTER or ACCEPT when ``ok``."""
    terms: tuple[tuple[str, Any], ...]
    """``(name, value)`` pairs in order (merged across COUNTERs)."""
    prose: str
    """The message minus its JSON: what the counterpart reads."""
    error: str | None
    """Parse error code when not ``ok``."""
    notes: str = ""
    """The action's free-text notes (never shown to the counterpart)."""
    flags: dict[str, bool] = field(default_factory=dict)
    """``json_leak``, ``placeholder``, ``template_tag``."""


def _parse_int(digits: str) -> int | float:
    # A literal too long for a float (or for int(), past 4,300 digits) is an infinity: the
    # scorer counts it as an invalid value instead of the decoder raising.
    if len(digits) <= _MAX_INT_DIGITS:
        return int(digits)
    return -math.inf if digits.startswith("-") else math.inf


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def _depth(obj: Any) -> int:
    """Nesting depth of decoded JSON (a scalar is 0), without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _decode_at(text: str, j: int, first: bool = False) -> tuple[Any, int, int]:
    """Decode the JSON value starting at ``text[j]``: ``(obj or _FAILED, end, chars scanned)``.

    The decoder is run on a window that grows geometrically, so a failure costs time in the
    distance to where it failed, not in ``j`` (``JSONDecodeError`` counts lines from the start
    of the string it was given). A window's failure is final when it happened well inside the
    window and is not an unterminated string; a success inside a window is the same as on the
    whole text (an object ends at its own ``}``). The ``first`` attempt of a message tries the
    second window at once (``_decode_fits``): one extra hand-off per message, so the bound holds.
    """
    found = _decode_fits(text, j) if first else None
    if found is not None:
        return found
    n, width, scanned = len(text), _WINDOW, 0
    while True:
        stop = min(n, j + width)
        chunk = text[j:stop]
        try:
            obj, end = _DECODER.raw_decode(chunk)
            return obj, j + end, scanned + end
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(chunk) - _LOOKAHEAD or exc.msg.startswith("Unterminated string")
            if stop == n or not cut:
                return _FAILED, j + 1, scanned + exc.pos + 1
        except RecursionError:
            return _TOO_DEEP, j + 1, scanned + len(chunk)
        except ValueError:  # any other refusal of the decoder is a failed object
            return _FAILED, j + 1, scanned + len(chunk)
        scanned += len(chunk)
        width *= 4


def _decode_fits(text: str, j: int) -> tuple[Any, int, int] | None:
    """``_decode_at``'s answer when the value fits the second window, in one decode; else None.

    An action object is a few hundred characters, so the growing windows usually fail once on
    the first window and succeed on the second. Every narrower window of a value that decodes
    fails by being cut (a truncated value fails at its cut), so the answer, including the
    characters ``_decode_at`` would have counted as scanned, is known from the one success.
    """
    width = _WINDOW * 4
    try:
        obj, end = _DECODER.raw_decode(text[j:j + width])
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; let the windows decide
        return None
    return obj, j + end, end + (_WINDOW if end > _WINDOW else 0)


def _extract_objects(text: str) -> tuple[list[Any], str, str | None]:
    """All top-level JSON objects, the text with them removed, and a problem code or ``None``.

    Linear in ``len(text)``: only ``{`` followed by a key or ``}`` starts a decode, and the
    characters the decoder scans (including failed attempts) are capped at a few times the
    length; past the cap the rest is prose and the problem is ``too_complex``. An object
    nested deeper than ``_MAX_DEPTH`` stays in the prose and the problem is ``too_deep``.
    """
    objects: list[Any] = []
    kept: list[str] = []
    budget = _WORK_FACTOR * len(text) + _WORK_BASE
    problem = None
    i = 0
    while True:
        match = _OBJECT_START.search(text, i)
        if match is None:
            kept.append(text[i:])
            break
        j = match.start()
        if budget <= 0:
            kept.append(text[i:])
            problem = problem or "too_complex"
            break
        obj, end, scanned = _decode_at(text, j, first=i == 0)
        budget -= scanned + _ATTEMPT_COST
        if obj is _FAILED or obj is _TOO_DEEP:
            problem = problem or ("too_deep" if obj is _TOO_DEEP else None)
            kept.append(text[i:end])
        elif end - j > _MAX_DEPTH and _too_deep(text, j, end, obj):
            problem = problem or "too_deep"
            kept.append(text[i:end])
        else:
            kept.append(text[i:j])
            objects.append(obj)
        i = end
    return objects, "".join(kept), problem


def _too_deep(text: str, j: int, end: int, obj: Any) -> bool:
    # Brackets in the span bound the depth from above; walk the object only when they could
    # exceed the limit (never for an ordinary action).
    if text.count("{", j, end) + text.count("[", j, end) <= _MAX_DEPTH:
        return False
    return _depth(obj) > _MAX_DEPTH


def _clean_prose(text: str) -> str:
    if "`" in text:
        text = _FENCE.sub(" ", text)
    # Runs of whitespace become one space, ends stripped: str.split and the regex ``\s`` both
    # use Python's Unicode whitespace, so this equals re.sub(r"\s+", " ", text).strip() (tested).
    # Most prose is already in that form once stripped: a printable string has no whitespace but
    # the ASCII space (every other whitespace character is unprintable), and without a double
    # space it has no run to fold; three C scans instead of splitting it into words.
    text = text.strip()
    if text.isprintable() and "  " not in text:
        return text
    return " ".join(text.split())


def _flags(prose: str) -> dict[str, bool]:
    # A bracketed placeholder is its own flag, not a JSON fragment. A placeholder needs "[" and a
    # template tag "<" or "["; most prose has neither, and skipping their scans is measurable.
    # A JSON fragment needs a bracket, a brace or a quote: the regex runs only when one is there.
    bracket = "[" in prose
    placeholder = bracket and _PLACEHOLDER.search(prose) is not None
    without = _PLACEHOLDER.sub(" ", prose) if placeholder else prose
    leak_chars = bracket or "{" in without or "}" in without or "]" in without or '"' in without
    return {
        "json_leak": leak_chars and _JSON_LEAK.search(without) is not None,
        "placeholder": placeholder,
        "template_tag": (bracket or "<" in prose) and _TEMPLATE_TAG.search(prose) is not None,
    }


def _terms_of(obj: dict) -> list[tuple[str, Any]] | None:
    terms = obj.get("terms", [])
    if terms is None:
        return []
    if not isinstance(terms, list):
        return None
    pairs = []
    for item in terms:
        if not isinstance(item, dict):
            return None
        name = item.get("name")
        if not isinstance(name, str) or "value" not in item:
            return None
        value = item["value"]
        # valid_text returns ASCII text as it is: only the rest needs its check
        if not name.isascii():
            name = valid_text(name)
        if isinstance(value, str) and not value.isascii():
            value = valid_text(value)
        pairs.append((name.strip(), value))
    return pairs


def _fail(prose: str, error: str, flags: dict[str, bool]) -> ParsedTurn:
    return ParsedTurn(False, None, (), prose, error, "", flags)


def valid_text(text: Any) -> str:
    """``text`` as a string that encodes as UTF-8 (lone surrogates become U+FFFD)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _SURROGATE.sub("\ufffd", text)
    return text


# Parses of short messages, by text: templated agents (scripted, policy) say the same messages
# again and again. Only parses whose term values are immutable scalars are kept, as a tuple of
# atoms (the collector untracks it), and every caller gets its own ParsedTurn and flags dict.
_PARSED: dict[str, tuple] = {}
_MAX_PARSED, _MEMO_CHARS = 4096, 4096
_SCALARS = frozenset({str, int, float, bool, type(None)})


def parse_message(text: Any) -> ParsedTurn:
    """Parse one message; never raises, time linear in ``len(text)``.

    A message longer than ``_MAX_CHARS`` is parsed only up to the cap and fails as
    ``too_long``; an object nested deeper than ``_MAX_DEPTH`` fails the turn as ``too_deep``;
    text whose decoding would cost more than a few passes over it fails as ``too_complex``.
    Lone surrogates (which no file format can store) are replaced by U+FFFD.
    """
    text = valid_text(text)
    if len(text) > _MEMO_CHARS or type(text) is not str:  # a str subclass may compare as it likes
        return _parse_valid(text)
    hit = _PARSED.get(text)
    if hit is None:
        parsed = _parse_valid(text)
        if not all(type(value) in _SCALARS for _, value in parsed.terms):
            return parsed
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        hit = _PARSED[text] = (parsed.ok, parsed.action, parsed.terms, parsed.prose, parsed.error,
                               parsed.notes, tuple(parsed.flags.items()))
    return ParsedTurn(*hit[:6], dict(hit[6]))


def _parse_valid(text: str) -> ParsedTurn:
    """``parse_message`` of a text ``valid_text`` returns as it is, without the memo."""
    too_long = len(text) > _MAX_CHARS
    if too_long:
        text = text[:_MAX_CHARS]
    objects, rest, problem = _extract_objects(text)
    prose = _clean_prose(rest)
    flags = _flags(prose)
    if too_long or problem:
        return _fail(prose, "too_long" if too_long else problem, flags)
    actions = [o for o in objects if isinstance(o, dict) and "action" in o]
    if not actions:
        return _fail(prose, "no_action", flags)
    kinds = []
    for obj in actions:
        kind = obj["action"].strip().upper() if isinstance(obj["action"], str) else None
        if kind not in ("COUNTER", "ACCEPT"):
            return _fail(prose, "unknown_action", flags)
        kinds.append(kind)
    if len(set(kinds)) > 1:
        return _fail(prose, "mixed_actions", flags)
    merged: dict[str, Any] = {}
    notes = []
    for obj in actions:
        pairs = _terms_of(obj)
        if pairs is None:
            return _fail(prose, "bad_terms", flags)
        for name, value in pairs:
            merged.pop(name, None)  # re-insert so the order is the order of last mention
            merged[name] = value
        if isinstance(obj.get("notes"), str):
            notes.append(valid_text(obj["notes"]))
    action: Action = kinds[0]  # type: ignore[assignment]
    if action == "COUNTER" and not merged:
        return _fail(prose, "empty_counter", flags)
    return ParsedTurn(True, action, tuple(merged.items()), prose, None, " ".join(notes), flags)
