"""Turn tags read off Gemma-4-style templates (Appendix J) and the round-trip check."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.training.nemo import TurnTagError, check_round_trip, derive_turn_tags, template_kwargs
from tests.training.nemo.chat_fixtures import (
    NO_THINKING_SWITCH_TEMPLATE, REWRITING_TEMPLATE, SPECIAL_TOKENS, JinjaChatTokenizer, conventional, e_series,
)

THINKING_OFF = template_kwargs(False)


def test_template_kwargs_follow_the_protocol_thinking_flag():
    assert template_kwargs(False) == {"enable_thinking": False}
    assert template_kwargs(True) == {"enable_thinking": True}
    assert template_kwargs(None) == {}


def test_e_series_tags():
    tokenizer = e_series()
    tags = derive_turn_tags(tokenizer, THINKING_OFF)
    assert tags.end_of_turn == "<turn|>"
    assert tags.end_of_turn_id == tokenizer.encode("<turn|>")[0]
    assert tags.after_end_of_turn == "\n"
    assert tags.user_open == "<|turn>user\n"
    assert tags.user_close == "<turn|>\n"
    assert tags.generation_prompt == "<|turn>model\n"
    assert tags.history_model_open == "<|turn>model\n"
    assert tags.observation("Fine.") == "\n<|turn>user\nFine.<turn|>\n<|turn>model\n"


def test_conventional_tags_carry_the_empty_thought_channel():
    tags = derive_turn_tags(conventional(), THINKING_OFF)
    assert tags.generation_prompt == "<|turn>model\n<|channel>thought\n<channel|>"
    # Past model turns render without the prologue; the check accepts exactly that difference.
    assert tags.history_model_open == "<|turn>model\n"
    assert tags.observation("Fine.") == "\n<|turn>user\nFine.<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"


def test_the_two_variants_differ_by_the_prologue_tokens_only():
    e_tags = derive_turn_tags(e_series(), THINKING_OFF)
    c_tags = derive_turn_tags(conventional(), THINKING_OFF)
    assert c_tags.generation_prompt == e_tags.generation_prompt + "<|channel>thought\n<channel|>"
    assert c_tags.model_copy(update={"generation_prompt": e_tags.generation_prompt}) == e_tags


def test_thinking_on_opens_the_channel_without_closing_it():
    tags = derive_turn_tags(conventional(), template_kwargs(True))
    assert tags.generation_prompt == "<|turn>model\n<|channel>thought\n"
    assert tags.template_kwargs == {"enable_thinking": True}


def test_a_template_that_ignores_the_thinking_switch_is_refused():
    with pytest.raises(TurnTagError, match="never reads.*enable_thinking"):
        derive_turn_tags(JinjaChatTokenizer(NO_THINKING_SWITCH_TEMPLATE), THINKING_OFF)


def test_a_template_that_rewrites_earlier_turns_is_refused():
    with pytest.raises(TurnTagError, match="changes earlier text"):
        derive_turn_tags(JinjaChatTokenizer(REWRITING_TEMPLATE), THINKING_OFF)


def test_tags_of_one_variant_fail_the_round_trip_on_the_other():
    e_tags = derive_turn_tags(e_series(), THINKING_OFF)
    history = [{"role": "user", "content": "Open."}, {"role": "assistant", "content": "Hello."},
               {"role": "user", "content": "Hi."}]
    with pytest.raises(TurnTagError, match="does not end with the generation prompt"):
        check_round_trip(conventional(), e_tags, history)


def test_a_wrong_user_header_fails_the_round_trip():
    tokenizer = e_series()
    tags = derive_turn_tags(tokenizer, THINKING_OFF).model_copy(update={"user_open": "<|turn>buyer\n"})
    history = [{"role": "user", "content": "Open."}, {"role": "assistant", "content": "Hello."},
               {"role": "user", "content": "Hi."}]
    with pytest.raises(TurnTagError, match="differs from the template's render at offset"):
        check_round_trip(tokenizer, tags, history)


def test_history_must_alternate_and_end_with_the_buyer():
    tags = derive_turn_tags(e_series(), THINKING_OFF)
    with pytest.raises(ValueError, match="alternating"):
        check_round_trip(e_series(), tags, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40) \
    .map(str.strip).filter(lambda t: t and not any(s in t for s in SPECIAL_TOKENS))


@settings(max_examples=40, deadline=None)
@given(turns=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=4), prompt=_TEXT, variant=st.booleans())
def test_round_trip_holds_for_arbitrary_dialogues(turns, prompt, variant):
    tokenizer = conventional() if variant else e_series()
    tags = derive_turn_tags(tokenizer, THINKING_OFF)
    history = [{"role": "user", "content": prompt}]
    for model_text, user_text in turns:
        history += [{"role": "assistant", "content": model_text}, {"role": "user", "content": user_text}]
    check_round_trip(tokenizer, tags, history)
