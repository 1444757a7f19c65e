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

Flags are computed whether or not the turn parsed: a JSON fragment left in the prose, an
unfilled ``[placeholder]``, a leaked chat-template tag.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["COUNTER", "ACCEPT"]

_FENCE = re.compile(r"```[a-zA-Z]*")
_PLACEHOLDER = re.compile(r"\[[A-Za-z][^\[\]\n]{2,60}\]")
_TEMPLATE_TAG = re.compile(
    r"<\|[a-z_]*\|?>|<\|?(?:turn|channel|start_of_turn|end_of_turn|im_start|im_end|eot_id)\|?>"
    r"|<(?:start|end)_of_turn>|\[/?INST\]|</?s>",
    re.IGNORECASE,
)
_JSON_LEAK = re.compile(r"[{}\[\]]|\"(?:action|terms|name|value)\"\s*:")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
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


def _extract_objects(text: str) -> tuple[list[Any], str]:
    """All top-level JSON objects and the text with them removed."""
    objects: list[Any] = []
    kept: list[str] = []
    i = 0
    while i < len(text):
        j = text.find("{", i)
        if j < 0:
            kept.append(text[i:])
            break
        try:
            obj, end = _DECODER.raw_decode(text, j)
        except (ValueError, RecursionError):
            kept.append(text[i : j + 1])
            i = j + 1
            continue
        kept.append(text[i:j])
        objects.append(obj)
        i = end
    return objects, "".join(kept)


def _clean_prose(text: str) -> str:
    text = _FENCE.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


def _flags(prose: str) -> dict[str, bool]:
    # A bracketed placeholder is its own flag, not a JSON fragment.
    without_placeholders = _PLACEHOLDER.sub(" ", prose)
    return {
        "json_leak": bool(_JSON_LEAK.search(without_placeholders)),
        "placeholder": bool(_PLACEHOLDER.search(prose)),
        "template_tag": bool(_TEMPLATE_TAG.search(prose)),
    }


def _terms_of(obj: dict) -> list[tuple[str, Any]] | None:
    terms = obj.get("terms", [])
    if terms is None:
        return []
    if not isinstance(terms, list):
        return None
    pairs = []
    for item in terms:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "value" not in item:
            return None
        pairs.append((item["name"].strip(), item["value"]))
    return pairs


def _fail(prose: str, error: str, flags: dict[str, bool]) -> ParsedTurn:
    return ParsedTurn(False, None, (), prose, error, "", flags)


def parse_message(text: Any) -> ParsedTurn:
    """Parse one message; never raises."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    objects, rest = _extract_objects(text)
    prose = _clean_prose(rest)
    flags = _flags(prose)
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
            notes.append(obj["notes"])
    action: Action = kinds[0]  # type: ignore[assignment]
    if action == "COUNTER" and not merged:
        return _fail(prose, "empty_counter", flags)
    return ParsedTurn(True, action, tuple(merged.items()), prose, None, " ".join(notes), flags)
