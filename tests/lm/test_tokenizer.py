"""The ladder's tokenizer: the chat template against negotiation.env, turn tags."""

from __future__ import annotations

import pytest

from negotiation.env import load_domain, make_scenario, render_messages
from negotiation.ladder import ladder_tags, seller_chats
from negotiation.lm import END_OF_TURN, encode_chat, load_tokenizer, train_tokenizer
from negotiation.errors import ConfigError
from tests.conftest import tiny_lm_protocol


def test_chat_template_renders_the_seller_messages_of_negotiation_env(tiny_lm):
    tokenizer = load_tokenizer(tiny_lm)
    scenario = make_scenario(load_domain("used_car"), 5000053, 0.3)
    from negotiation.env import Negotiation
    from negotiation.protocol import env_config
    from negotiation.study import load_study

    view = Negotiation(scenario, env_config(load_study("lm").protocol)).view()
    messages = render_messages(view, "evaluation", converge_from_turn=16)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    expected = ("<bos>" + "".join(f"<start_of_turn>{m['role']}\n{m['content']}<end_of_turn>\n" for m in messages)
                + "<start_of_turn>model\n")
    assert text == expected
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text  # byte-level BPE loses nothing


def test_thinking_on_is_refused_and_unknown_roles_too(tiny_lm):
    tokenizer = load_tokenizer(tiny_lm)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(Exception, match="no thinking mode"):
        tokenizer.apply_chat_template(messages, tokenize=False, enable_thinking=True)
    with pytest.raises(Exception, match="unknown chat role tool"):
        tokenizer.apply_chat_template([{"role": "tool", "content": "x"}], tokenize=False)


def test_turn_tags_and_loss_mask_cover_exactly_the_seller_turns(tiny_lm):
    protocol = tiny_lm_protocol()
    tokenizer = load_tokenizer(tiny_lm)
    tags = ladder_tags(protocol, tokenizer)
    assert tags.end_of_turn == END_OF_TURN == tokenizer.eos_token
    chat = next(c for c in seller_chats(protocol, "train") if c.variant == "training")
    ids, mask = encode_chat(tokenizer, tags, chat.messages)
    whole = tokenizer.apply_chat_template(list(chat.messages), tokenize=False, **tags.template_kwargs)
    assert tokenizer.decode(ids) + "\n" == whole  # the template closes the last turn with a newline
    seller = [m["content"] for m in chat.messages if m["role"] == "assistant"]
    runs, current = [], []
    for token, target in zip(ids, mask):
        if target:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    runs.append(current)
    assert [tokenizer.decode(r) for r in runs] == [s + END_OF_TURN for s in seller]


def test_same_corpus_same_tokenizer_and_vocab_floor():
    texts = ["Happy to start at 42 $k.", 'then {"action": "COUNTER"}'] * 20
    a, b = train_tokenizer(texts, 300), train_tokenizer(texts, 300)
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()
    with pytest.raises(ConfigError, match="vocab_size"):
        train_tokenizer(texts, 100)
