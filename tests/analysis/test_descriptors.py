"""Turn-table descriptors: openers, terms at turn 1, buyer's voice, leaks, walk-aways."""

import json

import pandas as pd
import pytest

from negotiation.analysis._descriptors import (
    descriptor_summary,
    env_seller_utility,
    episode_descriptors,
    opener,
    style_summary,
    walk_aways,
)

from tests.analysis.frames import episode, frame, turn

TERMS = {"car": ["price", "model"], "job": ["salary", "title", "remote"]}


def turns_a():
    return frame([
        turn("A", "car", 1, "x", 1, "seller", "I'm looking to buy a fine car.", terms=[("price", 40), ("color", "red")],
             n_off_schema=1, json_leak=True),
        turn("A", "car", 1, "x", 2, "buyer", "Too high for me.", terms=[("price", 30)]),
        turn("A", "car", 1, "x", 3, "seller", "I'm looking forward to it.", terms=[("price", 35)]),
        turn("A", "job", 2, "x", 1, "seller", "Hello there friend, welcome.", placeholder=True),
        turn("A", "job", 2, "x", 2, "buyer", "Hi.", template_tag=True),
        turn("A", "job", 2, "x", 3, "seller", "Hello there friend, again [name].", terms=[("salary", 90), ("title", "Lead")],
             ok=False),
    ])


def test_opener_is_three_lowercase_words():
    assert opener("I'm looking, to buy!") == "i'm looking to"
    assert opener("Two words") is None


def test_episode_descriptors_by_hand():
    desc = episode_descriptors(turns_a(), TERMS).set_index(["arm", "domain", "seed", "buyer"])
    car, job = desc.loc[("A", "car", 1, "x")], desc.loc[("A", "job", 2, "x")]
    assert car["opens_with_terms"] and car["terms_at_open"] == 1 and car["open_term_share"] == pytest.approx(0.5)
    assert car["buyer_voice_open"]
    assert car["seller_terms_named"] == 3 and car["seller_off_schema_named"] == 1
    assert not job["opens_with_terms"] and not job["buyer_voice_open"]
    assert job["seller_terms_named"] == 2


def test_style_summary_by_hand():
    style = style_summary(turns_a()).set_index("arm").loc["A"]
    # seller openers: "i'm looking to", "i'm looking forward", "hello there friend" x2
    # -> top share 2/4, top three 4/4
    assert style["seller_turns"] == 4
    assert style["top_opener_share"] == pytest.approx(0.5) and style["top3_opener_share"] == pytest.approx(1.0)
    # only the second "hello there friend" repeats an opener of its own episode: 1 of 4
    assert style["repeated_opener_rate"] == pytest.approx(0.25)
    assert style["json_leak_share"] == pytest.approx(0.25)
    assert style["placeholder_count"] == 1 and style["template_tag_count"] == 1
    assert style["bad_parse_seller"] == pytest.approx(0.25)


def price_utility(domain, seed, ledger):
    return ledger.get("price", 0) / 100.0


def test_walk_away_means_no_concession_in_a_no_deal():
    turns = frame([
        turn("A", "car", 1, "x", 1, "seller", "a b c", ledger={"price": 50}),
        turn("A", "car", 1, "x", 3, "seller", "a b c", ledger={"price": 50}),
        turn("A", "car", 1, "x", 5, "seller", "a b c", ledger={"price": 60}),
        turn("A", "car", 2, "x", 1, "seller", "a b c", ledger={"price": 50}),
        turn("A", "car", 2, "x", 3, "seller", "a b c", ledger={"price": 45}),
        turn("A", "car", 3, "x", 1, "seller", "a b c", ledger={"price": 50}),
    ])
    episodes = frame([episode("A", "car", 1, "x", deal=False), episode("A", "car", 2, "x", deal=False),
                      episode("A", "car", 3, "x")])
    flags = walk_aways(turns, episodes, price_utility)
    assert flags.to_dict() == {("A", "car", 1, "x"): True, ("A", "car", 2, "x"): False}


def test_descriptor_summary_by_hand():
    turns = turns_a()
    episodes = frame([
        episode("A", "car", 1, "x", ledger={"price": 35, "color": "red"}),
        episode("A", "job", 2, "x", deal=False),
    ])
    flags = pd.Series([False], index=pd.MultiIndex.from_tuples([("A", "job", 2, "x")],
                                                                names=["arm", "domain", "seed", "buyer"]))
    summary = descriptor_summary(episode_descriptors(turns, TERMS), episodes, TERMS, ["car"], flags)
    row = summary.set_index("arm").loc["A"]
    assert row["opens_with_terms"] == pytest.approx(0.5) and row["terms_at_open"] == pytest.approx(1.0)
    assert row["buyer_voice_held_out"] == pytest.approx(1.0)
    assert row["off_schema_share"] == pytest.approx(1 / 5)
    assert row["off_schema_deal_share"] == pytest.approx(1.0)
    assert row["walk_away_rate"] == pytest.approx(0.0)


def test_env_seller_utility_matches_the_environment():
    from negotiation.env import load_domain, make_scenario, score_ledger

    domain = load_domain("used_car")
    term = next(t for t in domain.terms if t.is_continuous)
    ledger = {term.name: term.range[0]}
    expected = score_ledger(make_scenario(domain, 5000000), "seller", ledger).u_tilde
    assert env_seller_utility(0.3)("used_car", 5000000, ledger) == pytest.approx(expected)


def test_walk_aways_of_deals_only_keep_the_named_index():
    """Every episode a deal: no flag, but callers still select by the ``arm`` level (it raised)."""
    turns = frame([turn("A", "car", 1, "x", 1, "seller", "a b c", ledger={"price": 50})])
    flags = walk_aways(turns, frame([episode("A", "car", 1, "x")]), price_utility)
    assert flags.empty and list(flags.index.names) == ["arm", "domain", "seed", "buyer"]
    summary = descriptor_summary(episode_descriptors(turns, TERMS), frame([episode("A", "car", 1, "x")]), TERMS,
                                 ["car"], flags)
    assert list(summary["arm"]) == ["A"]
