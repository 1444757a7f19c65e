"""Credentials never reach a written file: redaction and the spec rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from negotiation.agents._llm_secrets import forbid_inline_secrets, redact, redact_obj, secret_values
from negotiation.errors import ConfigError

ENV = {"OPENAI_API_KEY": "sk-proj-abcdefghijklmnop123", "HF_TOKEN": "hf_tokenvalue99", "MY_SECRET": "s3cr3t!!",
       "PATH": "/usr/bin", "SHORT_KEY": "abc", "TOKENIZERS_PARALLELISM": "false"}


def test_secret_variables_are_found_by_name():
    assert secret_values(ENV) == {"sk-proj-abcdefghijklmnop123": "OPENAI_API_KEY", "hf_tokenvalue99": "HF_TOKEN",
                                  "s3cr3t!!": "MY_SECRET"}


def test_values_bearer_tokens_and_key_shapes_are_replaced():
    text = "auth failed for sk-proj-abcdefghijklmnop123 (hf_tokenvalue99), header Bearer abcdef123456, s3cr3t!!"
    assert redact(text, ENV) == ("auth failed for [redacted:OPENAI_API_KEY] ([redacted:HF_TOKEN]), header "
                                 "Bearer [redacted], [redacted:MY_SECRET]")
    assert redact("someone's key sk-ABCDEFGHIJKLMNOPQRS leaked", {}) == "someone's key [redacted-key] leaked"
    assert redact("price 40, path /usr/bin", ENV) == "price 40, path /usr/bin"


def test_nested_values():
    got = redact_obj({"a": ["x hf_tokenvalue99", 3, ("s3cr3t!!",)], "b": None}, ENV)
    assert got == {"a": ["x [redacted:HF_TOKEN]", 3, ("[redacted:MY_SECRET]",)], "b": None}


@given(prefix=st.text(max_size=30), suffix=st.text(max_size=30))
def test_a_planted_secret_never_survives(prefix, suffix):
    env = {"PLANTED_API_KEY": "planted-XYZ-0123456789"}
    assert "planted-XYZ-0123456789" not in redact(prefix + "planted-XYZ-0123456789" + suffix, env)


def test_specs_name_the_variable_never_the_key():
    with pytest.raises(ConfigError, match="api_key_env") as info:
        forbid_inline_secrets("litellm:openai/m?api_key=sk-live-0123456789abcdef", ["api_key"])
    assert "sk-live-0123456789abcdef" not in str(info.value)
    forbid_inline_secrets("litellm:openai/m?api_key_env=MY_KEY", ["api_key_env", "max_tokens", "api_base"])


KEY = "Zq9/x y+z&w=v~plainish-42"  # a key with characters URL and JSON encodings change


def fragments(text: str, key: str, length: int = 8) -> list[str]:
    """Every piece of ``key`` of ``length`` characters or more that ``text`` holds."""
    return [key[i:i + length] for i in range(len(key) - length + 1) if key[i:i + length] in text]


@pytest.mark.parametrize("form", ["plain", "url", "url_plus", "json"])
def test_a_key_echoed_in_an_encoded_form_is_redacted(form):
    import json
    from urllib.parse import quote, quote_plus

    echoed = {"plain": KEY, "url": quote(KEY, safe=""), "url_plus": quote_plus(KEY, safe=""),
              "json": json.dumps(KEY)[1:-1]}[form]
    assert fragments(redact(f"request to /v1?key={echoed} failed", {"PLANTED_API_KEY": KEY}), KEY) == []


@hypothesis_settings(max_examples=200)
@given(cut=st.integers(min_value=1, max_value=len(KEY) - 1), before=st.text(max_size=20))
def test_a_key_cut_at_a_string_edge_leaves_no_piece_of_8_characters(cut, before):
    env = {"PLANTED_API_KEY": KEY}
    assert fragments(redact(before + KEY[:cut], env), KEY) == []  # cut after its start (a truncation)
    assert fragments(redact(KEY[cut:] + before, env), KEY) == []  # the rest, starting the next string


def test_a_short_key_named_by_api_key_env_is_redacted():
    from negotiation.agents._llm_secrets import register_secret_env

    register_secret_env("TINY_PROVIDER_PASS")
    assert redact("echo: k3y9!", {"TINY_PROVIDER_PASS": "k3y9!"}) == "echo: [redacted:TINY_PROVIDER_PASS]"
    assert redact("echo: k3y9!", {"OTHER_PASS": "k3y9!"}) == "echo: k3y9!"  # unregistered and short: a word


@pytest.mark.parametrize("cut", [500, 2000])
def test_an_error_body_cut_through_the_key_keeps_no_piece_of_it(cut, monkeypatch):
    import json

    from negotiation.agents._llm_transport import failure_from_status

    padding = "x" * (cut - 10)
    monkeypatch.setenv("PLANTED_API_KEY", KEY)
    plain = failure_from_status(401, padding + KEY + " tail", {})
    wrapped = failure_from_status(401, json.dumps({"error": {"message": padding + KEY}}), {})
    assert fragments(plain.message, KEY) == [] and fragments(wrapped.message, KEY) == []
