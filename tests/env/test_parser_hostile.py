"""Hostile model output: the parser and scorer stay total, bounded and linear.

Regression tests for the adversarial review: a 1e309 COUNTER value crashed the scorer
(OverflowError), 100 KB of ``{`` took seconds inside ``Negotiation.apply`` (quadratic), and a
lone surrogate or absurd nesting could stop the tables from being written.
"""

from __future__ import annotations

import asyncio
import io
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env import (
    EnvConfig, Negotiation, Reply, arun_episode, episodes_to_frames, parse_message, score_ledger,
)
from negotiation.env import _parse
from tests.env.toy_env import make_toy, make_toy_domain

CFG = EnvConfig(max_rounds=2, no_deal_penalty=0.3, g_fmt=0.1, g_len=0.1, t_soft=1.5,
                accept_applies_terms=False)


def counter(value_json: str, name: str = "price") -> str:
    return f'Deal? {{"action": "COUNTER", "terms": [{{"name": "{name}", "value": {value_json}}}]}}'


@pytest.mark.parametrize("literal", ["1e309", "-1e400", "9" * 400, "-" + "9" * 5000, "NaN", "Infinity"])
def test_numbers_that_do_not_fit_a_float_are_counted_invalid(toy, literal):
    parsed = parse_message(counter(literal))
    assert parsed.ok and parsed.terms[0][0] == "price"
    assert not math.isfinite(parsed.terms[0][1]) or abs(parsed.terms[0][1]) > 1.8e308
    score = score_ledger(toy, "seller", dict(parsed.terms))
    assert score.n_invalid == 1 and math.isfinite(score.u_tilde)


def test_a_huge_python_int_in_a_ledger_is_invalid_not_an_overflow(toy):
    assert score_ledger(toy, "buyer", {"price": 10**400}).n_invalid == 1
    assert score_ledger(toy, "buyer", {"price": -(10**400)}).n_invalid == 1


@pytest.mark.parametrize("text,error", [
    ("{" * 100_000, "too_long"),
    ("x" * (_parse._MAX_CHARS + 1) + counter("5"), "too_long"),
    (counter("[" * 20 + "]" * 20), "too_deep"),
    (counter("[" * 5000 + "]" * 5000), "too_deep"),
    ('{"a":' * 5000 + "1" + "}" * 5000, "too_deep"),
    ('{"a":1 ' * 9000, "too_complex"),
])
def test_absurd_messages_are_bad_parses(text, error):
    parsed = parse_message(text)
    assert (parsed.ok, parsed.error) == (False, error)


@pytest.mark.parametrize("make", [
    lambda n: "{" * n,
    lambda n: '{"a"' * (n // 4),
    lambda n: '{"a":1 ' * (n // 7),
    lambda n: '{"a":{"a":' * (n // 10) + '"' + "x" * (n // 2),
    lambda n: '{"action":"COUNTER","terms":[' + "[" * n,
    lambda n: '{"k":"' + "\\u12" * (n // 4),
])
def test_decoder_work_is_linear_in_the_length(monkeypatch, make):
    """Characters handed to the JSON decoder stay within a constant times the length.

    Each attempt costs at least ``_ATTEMPT_COST`` of the budget and hands over a window of
    ``_WINDOW`` characters (or a window it scanned through), hence the bound.
    """
    seen = []
    real = _parse._DECODER.raw_decode
    monkeypatch.setattr(_parse, "_DECODER", type("D", (), {
        "raw_decode": staticmethod(lambda s, idx=0: (seen.append(len(s)), real(s, idx))[1])})())
    for n in (8_000, 60_000):
        seen.clear()
        parse_message(make(n))
        budget = _parse._WORK_FACTOR * n + _parse._WORK_BASE
        bound = (_parse._WINDOW // _parse._ATTEMPT_COST + 4) * budget + 4 * n
        assert sum(seen) <= bound, (n, sum(seen), len(seen))


def test_lone_surrogates_are_replaced_and_the_tables_can_be_written(toy):
    game = Negotiation(toy, CFG)
    game.apply('Hi \ud800 {"action": "COUNTER", "terms": [{"name": "\\udc00x", "value": "\\ud83d"}]}')
    while not game.done:
        game.apply("no")
    episodes, turns = episodes_to_frames([game.record("a", "b")], {"arm": "x"})
    for frame in (episodes, turns):
        frame.to_parquet(io.BytesIO(), index=False)
    assert "\ufffd" in turns.raw.iloc[0]


def test_valid_input_parses_as_before():
    text = ('Prose {"action": "COUNTER", "terms": [{"name": "price", "value": 18000}, '
            '{"name": "trim", "value": "Sport"}]} trailing {not json} {"x": 1}')
    parsed = parse_message(text)
    assert (parsed.ok, parsed.terms) == (True, (("price", 18000), ("trim", "Sport")))
    assert parsed.prose == "Prose trailing {not json}"


def test_long_replies_are_parsed_off_the_event_loop(toy, monkeypatch):
    threads = []
    real = _parse.parse_message
    import negotiation.env._engine as engine
    import threading

    def spy(text):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(text)

    monkeypatch.setattr(engine, "parse_message", spy)

    class Talker:
        spec = "talker"

        async def arespond(self, view):
            return Reply("x" * (engine.OFFLOAD_CHARS + 1) + counter("5"))

    episode = asyncio.run(arun_episode(toy, Talker(), Talker(), CFG))
    assert threads and not any(threads) and episode.n_turns == CFG.max_turns


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=40), value=JSONISH, name=st.sampled_from(["price", "warranty", "x", ""]),
       cut=st.integers(0, 200), junk=st.text(alphabet='{}[]":,\\ 0123456789eE.-+aNInfty\ud800', max_size=60))
def test_mutated_messages_never_raise_and_always_tabulate(prefix, value, name, cut, junk):
    body = json.dumps({"action": "COUNTER", "terms": [{"name": name, "value": value}]})
    game = Negotiation(make_toy(make_toy_domain()), CFG)
    for text in (prefix + body, body[:cut] + junk, junk + body + junk, prefix + junk):
        if game.done:
            break
        game.apply(text)
    while not game.done:
        game.apply('{"action": "ACCEPT"}')
    episodes, turns = episodes_to_frames([game.record("a", "b")], {"arm": "x"})
    for frame in (episodes, turns):
        frame.to_parquet(io.BytesIO(), index=False)
