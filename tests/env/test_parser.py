"""The total parser: every text maps to a defined outcome; the prose is the text minus JSON."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env import parse_message

COUNTER = '{"action": "COUNTER", "terms": [{"name": "price", "value": 40}, {"name": "model", "value": "Sedan"}]}'


def test_prose_then_counter():
    p = parse_message(f"We are close. Let's meet in the middle.\n{COUNTER}")
    assert (p.ok, p.action, p.error) == (True, "COUNTER", None)
    assert p.terms == (("price", 40), ("model", "Sedan"))
    assert p.prose == "We are close. Let's meet in the middle."
    assert p.flags == {"json_leak": False, "placeholder": False, "template_tag": False}


def test_code_fences_and_trailing_text_are_dropped_from_json_kept_in_prose():
    p = parse_message(f"Fair enough.\n```json\n{COUNTER}\n```\nTalk soon.")
    assert p.ok and p.terms[0] == ("price", 40)
    assert p.prose == "Fair enough. Talk soon."


def test_several_counters_merge_in_order_last_value_wins():
    text = ('I can move. {"action": "COUNTER", "terms": [{"name": "price", "value": 40}, '
            '{"name": "service", "value": "none"}]} '
            '{"action": "counter", "terms": [{"name": "service", "value": "annual"}]} '
            '{"action": "COUNTER", "terms": [{"name": "accessories", "value": true}], "notes": "n2"}')
    p = parse_message(text)
    assert p.ok and p.action == "COUNTER"
    assert p.terms == (("price", 40), ("service", "annual"), ("accessories", True))
    assert p.notes == "n2" and p.prose == "I can move."


@pytest.mark.parametrize("text,error", [
    ("Just prose, no action at all.", "no_action"),
    ('Here: {"terms": [{"name": "price", "value": 1}]}', "no_action"),
    ('{"action": "REJECT", "terms": []}', "unknown_action"),
    ('{"action": 3}', "unknown_action"),
    ('{"action": "ACCEPT"} {"action": "COUNTER", "terms": [{"name": "price", "value": 1}]}', "mixed_actions"),
    ('{"action": "COUNTER", "terms": {"price": 40}}', "bad_terms"),
    ('{"action": "COUNTER", "terms": [{"name": "price"}]}', "bad_terms"),
    ('{"action": "COUNTER", "terms": [{"name": 7, "value": 1}]}', "bad_terms"),
    ('{"action": "COUNTER", "terms": ["price"]}', "bad_terms"),
    ('{"action": "COUNTER", "terms": []}', "empty_counter"),
    ('{"action": "COUNTER"}', "empty_counter"),
    ('{"action": "COUNTER", "terms": [{"name": "price", "value": 40},', "no_action"),
    ("", "no_action"),
])
def test_each_malformed_shape_has_its_error(text, error):
    p = parse_message(text)
    assert (p.ok, p.action, p.terms, p.error) == (False, None, (), error)


def test_accept_with_and_without_terms():
    bare = parse_message('Deal. {"action": "accept", "terms": null}')
    assert (bare.ok, bare.action, bare.terms) == (True, "ACCEPT", ())
    with_terms = parse_message('{"action": "ACCEPT", "terms": [{"name": "price", "value": 41}]}')
    assert with_terms.ok and with_terms.terms == (("price", 41),) and with_terms.prose == ""


def test_truncated_json_leaks_into_prose_and_is_flagged():
    p = parse_message('Deal at 40. {"action": "COUNTER", "terms": [{"name": "price", "value": 40},')
    assert not p.ok and p.flags["json_leak"]
    assert p.prose.startswith('Deal at 40. {"action"')


def test_placeholder_and_template_tag_flags():
    p = parse_message(f"Best regards, [Your Name] <end_of_turn>\n{COUNTER}")
    assert p.ok
    assert p.flags == {"json_leak": False, "placeholder": True, "template_tag": True}
    assert parse_message(f"ok <|im_end|> {COUNTER}").flags["template_tag"]
    assert not parse_message(f"Price [in $k] is fine. {COUNTER}").flags["json_leak"]


def test_non_string_input_is_a_no_action_turn():
    assert parse_message(None).error == "no_action"
    assert parse_message(12).prose == "12"


_FRAGMENTS = st.sampled_from([
    "{", "}", "[", "]", ",", ":", '"', "```", "```json", '"action"', '"terms"', '"name"',
    '"value"', '"COUNTER"', '"ACCEPT"', '"notes"', "null", "true", "1e999", "-0", "NaN",
    " ", "\n", "price", "\\", "\\u00", "[Name]", "<|im_end|>", COUNTER,
])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["action", "terms", "name", "value", "notes", "x"]), inner, max_size=3),
    max_leaves=12,
)


def _check_total(text):
    p = parse_message(text)
    assert isinstance(p.prose, str)
    assert p.ok == (p.error is None) == (p.action is not None)
    assert set(p.flags) == {"json_leak", "placeholder", "template_tag"}
    if p.action == "COUNTER":
        assert p.terms


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text):
    _check_total(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS | st.text(max_size=4), max_size=30).map("".join))
def test_never_raises_on_json_ish_fragments(text):
    _check_total(text)


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=20), obj=_JSON)
def test_never_raises_on_arbitrary_json_values(prefix, obj):
    _check_total(prefix + json.dumps(obj))


@settings(max_examples=100, deadline=None)
@given(prose=st.text(alphabet=st.characters(blacklist_characters="{}`"), max_size=40),
       terms=st.lists(st.tuples(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True),
                                st.integers() | st.text(max_size=5) | st.booleans()),
                      min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_a_well_formed_counter_round_trips(prose, terms):
    payload = {"action": "COUNTER", "terms": [{"name": n, "value": v} for n, v in terms]}
    p = parse_message(f"{prose}\n{json.dumps(payload)}")
    assert p.ok and p.terms == tuple(terms)
    assert p.prose == " ".join(re.sub("[\ud800-\udfff]", "\ufffd", prose).split())  # lone surrogates replaced
