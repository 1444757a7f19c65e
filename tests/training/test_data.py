"""Training and validation datasets: deterministic by position, blocks respected, 80/20 buyers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from negotiation.training import ScenarioMaker, TrainItem, training_items, validation_items
from tests.training.tiny_setup import tiny_data

DATA = tiny_data()


def test_items_are_positional_and_seeded():
    head = training_items(DATA, dataset_seed=4, start=0, count=8)
    assert training_items(DATA, dataset_seed=4, start=5, count=3) == head[5:]
    assert training_items(DATA, dataset_seed=4, start=0, count=8) == head
    assert training_items(DATA, dataset_seed=5, start=0, count=8) != head


def test_one_pass_covers_every_pair_once_then_wraps():
    n_pairs = len(DATA.domains) * (DATA.train_seeds[1] - DATA.train_seeds[0])  # 2 x 50
    items = training_items(DATA, dataset_seed=0, start=0, count=n_pairs + 3)
    pairs = [(it.domain, it.seed) for it in items]
    assert len(set(pairs[:n_pairs])) == n_pairs
    assert pairs[n_pairs:] == pairs[:3]
    assert {d for d, _ in pairs} == set(DATA.domains)
    assert all(0 <= s < 50 for _, s in pairs)


def test_buyer_mixture_is_eighty_twenty():
    items = training_items(DATA, dataset_seed=1, start=0, count=4000)
    share = sum(it.buyer == "scripted:boulware?e=0.2" for it in items) / len(items)
    assert 0.78 < share < 0.82  # binomial sd 0.0063 around 0.8


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 40))
def test_items_stay_in_the_training_block(start, count):
    for item in training_items(DATA, dataset_seed=3, start=start, count=count):
        assert DATA.train_seeds[0] <= item.seed < DATA.train_seeds[1]
        assert item.domain in DATA.domains
        assert item.buyer in {b.spec for b in DATA.buyers}


def test_validation_is_fixed_and_disjoint_from_training():
    val = validation_items(DATA)
    assert val == validation_items(DATA) and len(val) == DATA.validation_scenarios
    assert all(50 <= it.seed < 60 for it in val)
    bigger = validation_items(tiny_data(validation_scenarios=500))
    assert len(bigger) == 2 * 10  # capped at every (domain, seed) pair of the block


def test_negative_positions_are_refused():
    with pytest.raises(ValueError, match="start=-1 count=2"):
        training_items(DATA, dataset_seed=0, start=-1, count=2)


def test_overlapping_blocks_are_refused():
    with pytest.raises(ValidationError, match=r"train_seeds \[0, 50\] overlap validation_seeds \[40, 60\]"):
        tiny_data(validation_seeds=(40, 60))


def test_scenario_maker_builds_the_items_scenario_and_buyer():
    maker = ScenarioMaker(alpha=0.3)
    item = TrainItem("job_offer", 7, "scripted:conceder?e=2.0")
    scenario = maker.scenario(item)
    assert scenario.key == ("job_offer", 7) and scenario.alpha == 0.3
    assert maker.buyer(item) is maker.buyer(item) and maker.buyer(item).spec == item.buyer
    assert item.as_dict() == {"domain": "job_offer", "seed": 7, "buyer": "scripted:conceder?e=2.0"}
