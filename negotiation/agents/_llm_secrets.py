"""Keeping credentials out of everything the harness writes.

API keys come only from the environment. Providers and proxies sometimes echo them back in
error messages, so every string the harness stores (error messages, transcripts, sampling
records) passes through ``redact``: it replaces the value of every secret-looking environment
variable, bearer tokens and ``sk-``-style keys by a marker naming only the variable.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote, quote_plus

_SECRET_NAME = re.compile(r"(API_?KEY|_KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$|API_?KEY", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|rk|pk|key)-[A-Za-z0-9_-]{12,}\b")
_MIN_SECRET_LEN = 6  # shorter values ("1", "true") would redact ordinary words
_MIN_REGISTERED_LEN = 2  # a variable named by api_key_env is a credential even when short
FRAGMENT_LEN = 8
"""A piece of a key this long, cut at a string's edge, is redacted too."""
_extra_names: set[str] = set()


def register_secret_env(name: str) -> None:
    """Treat the environment variable ``name`` as a secret even if its name does not look like one."""
    _extra_names.add(name)


def secret_values(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``value -> variable name`` for every secret-looking variable of the environment.

    A variable named by ``api_key_env`` (``register_secret_env``) counts at any length but a
    trivial one: it is a credential whatever it looks like. Other secret-looking names count
    from ``_MIN_SECRET_LEN`` characters, so flags like ``1`` or ``true`` redact no words.
    """
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in env.items():
        registered = name in _extra_names and len(value) >= _MIN_REGISTERED_LEN
        if registered or (_SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_LEN):
            found[value] = name
    return found


def _forms(value: str) -> set[str]:
    """The spellings a provider may echo a key in: as is, URL-encoded, JSON-escaped."""
    return {value, quote(value, safe=""), quote_plus(value, safe=""), json.dumps(value)[1:-1]}


def _cut_fragment(text: str, value: str) -> tuple[int, int] | None:
    """Where ``text`` holds a piece of ``value`` cut by a truncation: a prefix of the key ending the
    text, or a suffix of it starting the text, of ``FRAGMENT_LEN`` characters or more."""
    for n in range(min(len(value) - 1, len(text)), FRAGMENT_LEN - 1, -1):
        if text.endswith(value[:n]):
            return len(text) - n, len(text)
        if text.startswith(value[-n:]):
            return 0, n
    return None


def redactor(environ: dict[str, str] | None = None) -> Callable[[str], str]:
    """A function redacting one string, with the environment's secrets read once (not per string)."""
    # Longest first, so a secret that contains another is replaced whole.
    secrets = sorted(((form, name) for value, name in secret_values(environ).items() for form in _forms(value)),
                     key=lambda kv: -len(kv[0]))
    whole = [(value, name) for value, name in secret_values(environ).items() if len(value) > FRAGMENT_LEN]

    def apply(text: str) -> str:
        if not text:
            return text
        for value, name in secrets:
            if value in text:
                text = text.replace(value, f"[redacted:{name}]")
        for value, name in whole:  # a key cut in half at a string's edge by some truncation
            if (span := _cut_fragment(text, value)) is not None:
                text = text[:span[0]] + f"[redacted:{name}]" + text[span[1]:]
        text = _BEARER.sub(r"\1[redacted]", text)
        return _KEY_LIKE.sub("[redacted-key]", text)

    return apply


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """``text`` with every secret value, bearer token and key-like string replaced."""
    return redactor(environ)(text)


def redact_obj_with(value: Any, apply: Callable[[str], str]) -> Any:
    """``apply`` (a ``redactor``) on every string inside nested dicts, lists and tuples."""
    if isinstance(value, str):
        return apply(value)
    if isinstance(value, dict):
        return {k: redact_obj_with(v, apply) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_obj_with(v, apply) for v in value)
    return value


def redact_obj(value: Any, environ: dict[str, str] | None = None) -> Any:
    """``redact`` applied to every string inside nested dicts, lists and tuples."""
    return redact_obj_with(value, redactor(environ))


_SECRET_OPTION = re.compile(r"(key|token|secret|passw(or)?d|pwd|credentials?|auth(orization)?|bearer|cookie)$"
                            r"|apikey|secret|passw|credential|bearer|accesstoken|authtoken")


def is_secret_option(key: str) -> bool:
    """Whether an option name, spelled any way (``key``, ``api-key``, ``API_KEY``, ``apiKey``,
    ``access.token``), would carry a credential; ``<name>_env`` naming a variable is fine."""
    folded = re.sub(r"[^a-z0-9]", "", key.lower())
    return not folded.endswith("env") and bool(_SECRET_OPTION.search(folded))


def forbid_inline_secrets(spec_text: str, options: Mapping[str, str] | Iterable[str]) -> None:
    """Refuse specs that carry a credential instead of naming its environment variable.

    Refused: an option whose name means a credential under any spelling, and any value shaped
    like a key (``sk-…``, ``Bearer …``) whatever its option is called.
    """
    from negotiation.errors import ConfigError

    values = options if isinstance(options, Mapping) else {}
    for key in options:
        value = values.get(key, "")
        # The refused value never appears in the message (it may be a real key).
        shown = redact(spec_text.replace(value, "<redacted>") if isinstance(value, str) and value else spec_text)
        if is_secret_option(key):
            raise ConfigError(f"agent spec {shown!r}:{key}: secrets come from the environment only; "
                              f"use api_key_env=<VARIABLE NAME> instead")
        if isinstance(value, str) and (_KEY_LIKE.search(value) or _BEARER.search(value)):
            raise ConfigError(f"agent spec {shown!r}:{key}: the value looks like a credential; "
                              "secrets come from the environment only (api_key_env=<VARIABLE NAME>)")
