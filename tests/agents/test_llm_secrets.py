"""Credentials never reach a written file: redaction and the spec rule."""

from __future__ import annotations

import pytest
from hypothesis import given
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
