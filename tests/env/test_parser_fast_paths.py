"""The parser's shortcuts give what the plain rules give, on open-ended text.

``_decode_fits`` decodes a message's first object in one window instead of growing windows;
``_clean_prose`` uses ``str.split``; ``_flags`` skips scans for characters the text lacks;
``parse_message`` memoizes short messages.
Each is compared with the plain rule it replaces, including the decoder work counted toward
``too_complex``.
"""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from negotiation.env import _parse, parse_message

pieces = st.sampled_from([
    '{"action": "COUNTER", "terms": [{"name": "price", "value": 40}]}', '{"action": "ACCEPT"}', "{", "}",
    '{"a":', "[", "]", '"', "\\u12", "```json", "```", " ", "\n", "\u00a0", "\u2028", "\x1c", "<|im_end|>",
    "[name]", "[/INST]", '"terms": ', "x" * 300, '{"action": "COUNTER", "terms": [' + ", ".join(
        f'{{"name": "t{i}", "value": {i}}}' for i in range(40)) + "]}", "Deal.", "1e999", "NaN",
])
messages = st.lists(st.one_of(pieces, st.text(max_size=20)), max_size=12).map("".join)


def _plain_flags(prose: str) -> dict[str, bool]:
    without = _parse._PLACEHOLDER.sub(" ", prose)
    return {"json_leak": bool(_parse._JSON_LEAK.search(without)),
            "placeholder": bool(_parse._PLACEHOLDER.search(prose)),
            "template_tag": bool(_parse._TEMPLATE_TAG.search(prose))}


@settings(max_examples=400, deadline=None)
@given(messages)
def test_prose_and_flags_equal_the_regex_rules(text):
    assert _parse._clean_prose(text) == re.sub(r"\s+", " ", _parse._FENCE.sub(" ", text)).strip()
    assert _parse._flags(text) == _plain_flags(text)


@settings(max_examples=400, deadline=None)
@given(messages)
def test_first_object_in_one_window_equals_growing_windows(text):
    fast = _parse._extract_objects(text)
    real = _parse._decode_fits
    _parse._decode_fits = lambda text, j: None
    try:
        plain = _parse._extract_objects(text)
    finally:
        _parse._decode_fits = real
    assert repr(fast) == repr(plain)


def test_decode_fits_counts_the_work_the_windows_would():
    obj = '{"action": "COUNTER", "terms": [' + ", ".join(f'{{"name": "t{i}", "value": {i}}}' for i in range(12)) + "]}"
    assert _parse._WINDOW < len(obj) <= 4 * _parse._WINDOW
    text = "Hello " + obj + " bye"
    assert _parse._decode_fits(text, 6) == _parse._decode_at(text, 6)
    assert _parse._decode_fits(text, 6)[2] == _parse._WINDOW + len(obj)
    assert parse_message(text).ok


@settings(max_examples=300, deadline=None)
@given(messages)
def test_memoized_parses_equal_fresh_ones_and_share_no_flags(text):
    fresh = _parse._parse_valid(_parse.valid_text(text)[:_parse._MAX_CHARS]) if len(text) <= _parse._MAX_CHARS else None
    first, again, hit = parse_message(text), parse_message(text), parse_message(text)  # stored the 2nd time
    assert repr(first) == repr(again) == repr(hit)
    if fresh is not None:
        assert repr(first) == repr(fresh)
    hit.flags["json_leak"] = "tampered"
    assert repr(parse_message(text)) == repr(again) and again.flags.get("json_leak") != "tampered"
