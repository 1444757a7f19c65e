"""The policy's features, checked by hand on the hand-set used_car preferences (car_prefs)."""

from __future__ import annotations

import numpy as np
import pytest

from negotiation.agents._policy_features import (
    MAX_LEVELS,
    FeatureError,
    check_domain,
    concat_features,
    view_features,
)
from negotiation.env import Domain
from tests.agents.car_prefs import CAR, said, view

# Turn 3: I (seller) opened with price 60 and the Sedan; the buyer answered price 20, Sport interior.
HISTORY = (said(1, "seller", {"price": 60, "model": "Sedan"}),
           said(2, "buyer", {"price": 20, "model": "Sedan", "interior": "Sport"}))
LEDGER = {"price": 20, "model": "Sedan", "interior": "Sport"}


@pytest.fixture(scope="module")
def fb():
    return view_features([view(turn=3, history=HISTORY, ledger=LEDGER)])


def test_slot_features_by_hand(fb):
    slots = fb.slots[0]
    # price: weight .3, continuous, named at 20 = the seller's worst (φ -1); the buyer set it to 20
    # (φ -1), I had set 60 (φ +1); open utility .3 (1 - (-1)) / 2 = .3; most important (rank 0).
    np.testing.assert_allclose(slots[0], [1, .3, 1, 0, 0, 1, -1, 1, -1, 1, 1, .3, 0, 0])
    # model: weight .05, categorical, named at my preferred Sedan (φ +1) by me; nothing open;
    # 1/4 levels; weight rank 6 of 0..9 (ties keep domain order: model, service, accessories).
    np.testing.assert_allclose(slots[1], [1, .05, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, .25, 6 / 9])
    # interior: weight .1, set by the buyer to Sport (not my Premium: φ -1); 1/3 levels; rank 2.
    np.testing.assert_allclose(slots[2], [1, .1, 0, 1, 0, 1, -1, 1, -1, 0, 0, .1, 1 / 3, 2 / 9])
    # delivery: never named -> φ 0, open utility .1 (1 - 0) / 2; rank 3 (after interior).
    np.testing.assert_allclose(slots[5], [1, .1, 1, 0, 0, 0, 0, 0, 0, 0, 0, .05, 0, 3 / 9])
    # accessories is binary.
    assert slots[4][2:5].tolist() == [0, 0, 1]


def test_global_features_by_hand(fb):
    # Ũ of the ledger: (.3·(-1) + .05·1 + .1·(-1) + 1) / 2 = .325; after my turn 1:
    # (.3 + .05 + 1) / 2 = .675. Progress (3 - 1) / 23. Three of ten terms named.
    expected = [2 / 23, .325, 0, 1, .325, 0, .675, .3, 1.0, 0]
    np.testing.assert_allclose(fb.globals[0], expected, atol=1e-7)


def test_level_features_and_masks(fb):
    # interior levels (Standard, Premium, Sport): [my preferred, on the ledger, asked by the buyer, 1].
    np.testing.assert_array_equal(fb.levels[0, 2, :3], [[0, 0, 0, 1], [1, 0, 0, 1], [0, 1, 1, 1]])
    assert fb.level_mask[0, 2].tolist() == [True] * 3 + [False] * (MAX_LEVELS - 3)
    assert not fb.level_mask[0, 0].any()  # price has no levels
    # accessories (binary, levels True/False): my preferred is False; nobody named it.
    np.testing.assert_array_equal(fb.levels[0, 4, :2], [[0, 0, 0, 1], [1, 0, 0, 1]])
    assert fb.slot_mask[0].all() and fb.continuous[0].tolist() == [
        True, False, False, False, False, True, True, True, False, False]
    assert fb.accept_ok.tolist() == [True]


def test_opening_view_masks_accept_and_flags_first_turn():
    fb = view_features([view(turn=1)])
    assert fb.accept_ok.tolist() == [False]
    # Empty ledger: Ũ .5 (every term unnamed), nobody spoke, first turn.
    np.testing.assert_allclose(fb.globals[0], [0, .5, 1, 0, 0, 0, 0, 0, 1.0, 1], atol=1e-7)


def test_invalid_values_count_as_unnamed():
    fb = view_features([view(turn=3, history=HISTORY, ledger={"price": "cheap", "model": "Tank"})])
    assert fb.slots[0, 0, 5] == 0 and fb.slots[0, 0, 6] == 0
    assert fb.slots[0, 1, 5] == 0 and fb.slots[0, 1, 6] == 0


def test_concat_stacks_rows():
    a = view_features([view(turn=1)])
    b = view_features([view(turn=3, history=HISTORY, ledger=LEDGER)])
    both = concat_features([a, b])
    assert both.slots.shape[0] == 2
    np.testing.assert_array_equal(both.globals[1], b.globals[0])


def test_domains_beyond_the_layout_are_refused():
    raw = CAR.model_dump()
    raw["terms"][1]["levels"] = [f"L{i}" for i in range(MAX_LEVELS + 1)]
    wide = Domain.model_validate(raw)
    with pytest.raises(FeatureError, match=r"domain 'used_car':terms.model.levels: 7 levels exceed 6"):
        check_domain(wide)
