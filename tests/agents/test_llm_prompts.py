"""Prompt templates: what each party sees, turn by turn, in both variants, and the recorded hash."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from tests.agents.car_prefs import SCENARIO

from negotiation.env import EnvConfig, Negotiation
from negotiation.env import PROMPT_TEMPLATES, prompt_hash, render_messages

ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)
CONVERGE = 16
S1 = 'Happy to talk. I propose a price of 50 and the Sedan.\n{"action": "COUNTER", "terms": [{"name": "price", "value": 50}, {"name": "model", "value": "Sedan"}]}'
B2 = 'Too high for me. How about 30?\n{"action": "COUNTER", "terms": [{"name": "price", "value": 30}]}'


def game_after(*texts: str) -> Negotiation:
    game = Negotiation(SCENARIO, ENV)
    for text in texts:
        game.apply(text)
    return game


def user_text(view, variant="evaluation") -> str:
    return render_messages(view, variant, converge_from_turn=CONVERGE)[-1]["content"]


def system_text(view) -> str:
    return render_messages(view, converge_from_turn=CONVERGE)[0]["content"]


def test_system_message_shows_own_priorities_and_never_the_others():
    seller = system_text(game_after().view())
    assert "- price: importance 0.300; higher values are better for you" in seller
    assert "- warranty_months: importance 0.150; lower values are better for you" in seller
    assert '- model: importance 0.050; you prefer "Sedan"' in seller
    assert "- accessories: importance 0.050; you prefer false" in seller
    for name, level in SCENARIO.buyer.preferred.items():  # the buyer's levels all differ from the seller's
        assert f"- {name}: importance {SCENARIO.seller.weights[name]:.3f}; you prefer {json.dumps(level)}" not in seller
    assert "Any deal above your reservation value beats no deal." in seller
    buyer = system_text(game_after(S1).view())
    assert '- model: importance 0.100; you prefer "SUV"' in buyer
    assert "- price: importance 0.100; lower values are better for you" in buyer
    assert "importance 0.300" not in buyer


def test_term_lines_carry_the_roles_own_description_range_unit_and_levels():
    seller = system_text(game_after().view())
    price = SCENARIO.domain.term("price").description.seller
    assert f"- price: {price} A number from 20 to 60 ($k)." in seller
    assert '- model: ' in seller and 'One of: "Sedan", "SUV", "Hatchback", "Wagon".' in seller
    assert re.search(r"^- accessories: .* true or false\.$", seller, re.MULTILINE)


def test_the_turn_cap_is_never_stated():
    view = game_after(S1, B2).view()
    other = dataclasses.replace(view, max_turns=1000)
    assert render_messages(view, converge_from_turn=CONVERGE) == render_messages(other, converge_from_turn=CONVERGE)


def test_turn_number_opening_and_converge_instructions():
    t = PROMPT_TEMPLATES["evaluation"]
    first = user_text(game_after().view())
    assert first.splitlines()[0] == "This is turn 1 of the negotiation."
    assert t.opening in first and t.converge not in first
    buyer_turn2 = user_text(game_after(S1).view())
    assert buyer_turn2.splitlines()[0] == "This is turn 2 of the negotiation." and t.opening not in buyer_turn2
    view = game_after(S1, B2).view()
    assert t.converge not in user_text(dataclasses.replace(view, turn=15))
    assert t.converge in user_text(dataclasses.replace(view, turn=16))
    assert t.converge in user_text(dataclasses.replace(view, turn=17, role="buyer", prefs=SCENARIO.buyer))


def test_history_shows_prose_and_table_changes_never_the_json():
    lines = user_text(game_after(S1, B2).view()).splitlines()
    assert "Turn 1, you: Happy to talk. I propose a price of 50 and the Sedan." in lines
    assert '    Table changes: {"price": 50, "model": "Sedan"}' in lines
    assert "Turn 2, the buyer: Too high for me. How about 30?" in lines
    assert '    Table changes: {"price": 30}' in lines
    assert not any('"action"' in line for line in lines)
    table = lines[lines.index("Terms on the table now:") + 1:]
    assert table[:2] == ["- price: 30 $k", '- model: "Sedan"']
    assert lines[-1] == PROMPT_TEMPLATES["evaluation"].format_reminder


def test_an_unreadable_own_turn_is_flagged_to_its_author_only():
    unread = PROMPT_TEMPLATES["evaluation"].history_unread
    game = game_after("I would like a good deal. {not json")
    assert unread not in user_text(game.view())  # the buyer sees only the prose
    game.apply(B2)
    seller_lines = user_text(game.view()).splitlines()
    assert seller_lines[seller_lines.index("Turn 1, you: I would like a good deal. {not json") + 1] == unread


def test_empty_history_and_table_are_said_so():
    text = user_text(game_after().view())
    assert "Nothing has been said yet." in text and "No terms are on the table yet." in text


def test_training_variant_grows_by_the_buyers_prose_alone():
    messages = render_messages(game_after(S1, B2).view(), "training", converge_from_turn=CONVERGE)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == PROMPT_TEMPLATES["training"].opening
    assert messages[2]["content"] == S1  # own raw message, JSON included
    assert messages[3]["content"] == "Too high for me. How about 30?"
    assert not any("This is turn" in m["content"] for m in messages)
    # Later turns add exactly one assistant and one user message, whatever the turn number.
    longer = render_messages(game_after(S1, B2, S1, B2).view(), "training", converge_from_turn=1)
    assert longer[:4] == messages and [m["role"] for m in longer[4:]] == ["assistant", "user"]


def test_training_variant_system_equals_the_evaluation_system():
    view = game_after(S1, B2).view()
    assert render_messages(view, "training", converge_from_turn=CONVERGE)[0] == \
        render_messages(view, "evaluation", converge_from_turn=CONVERGE)[0]


def test_hash_names_the_variant_and_changes_with_any_wording():
    evaluation, training = prompt_hash("evaluation"), prompt_hash("training")
    assert re.fullmatch(r"evaluation@1:[0-9a-f]{12}", evaluation)
    assert re.fullmatch(r"training@1:[0-9a-f]{12}", training)
    assert evaluation == PROMPT_TEMPLATES["evaluation"].hash == prompt_hash(PROMPT_TEMPLATES["evaluation"])
    reworded = PROMPT_TEMPLATES["evaluation"].model_copy(update={"reservation": "Any deal beats no deal."})
    assert reworded.hash != evaluation and reworded.hash.startswith("evaluation@1:")


def test_rendered_values_are_json_so_levels_and_booleans_read_back():
    game = game_after('Fine. {"action": "COUNTER", "terms": [{"name": "accessories", "value": true}, '
                      '{"name": "interior", "value": "Sport"}]}')
    lines = user_text(game.view()).splitlines()
    changes = next(line for line in lines if line.startswith("    Table changes: "))
    assert json.loads(changes.split(": ", 1)[1]) == {"accessories": True, "interior": "Sport"}


def test_the_cached_system_message_follows_template_role_and_preferences():
    view = game_after(S1, B2).view()
    base = render_messages(view, converge_from_turn=CONVERGE)[0]["content"]
    reworded = PROMPT_TEMPLATES["evaluation"].model_copy(update={"reservation": "Any deal beats no deal."})
    changed = render_messages(view, reworded, converge_from_turn=CONVERGE)[0]["content"]
    assert "Any deal beats no deal." in changed and "Any deal beats no deal." not in base
    other_prefs = dataclasses.replace(view, prefs=SCENARIO.buyer, role="buyer")
    assert render_messages(other_prefs, converge_from_turn=CONVERGE)[0]["content"] != base
    assert render_messages(view, converge_from_turn=CONVERGE)[0]["content"] == base


def test_the_evaluation_scaffold_needs_the_converge_turn():
    with pytest.raises(ValueError, match="converge_from_turn"):
        render_messages(game_after().view())
    assert render_messages(game_after().view(), "training")[1]["content"] == PROMPT_TEMPLATES["training"].opening
