"""Accounting by hand: tokens per side, $ per episode (unknown when any price is), retries, error rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from negotiation.evaluation import arm_accounting

ROWS = [
    # arm, buyer, outcome, deal, S, tokens in/out seller, in/out buyer, cost, cost_known, retries, latency
    ("a", "x", "deal", True, 0.8, 1000, 100, 2000, 200, 0.010, True, 1, 2.0),
    ("a", "x", "no_deal", False, -0.3, 3000, 300, 4000, 400, 0.030, True, 0, 4.0),
    ("a", "y", "error", False, math.nan, 500, 50, 0, 0, 0.005, True, 7, 1.0),
    ("b", "x", "deal", True, 0.5, 10, 1, 10, 1, 0.0, False, 0, 0.5),
]
COLS = ["arm", "buyer", "outcome", "deal", "S", "tokens_in_seller", "tokens_out_seller", "tokens_in_buyer",
        "tokens_out_buyer", "cost", "cost_known", "retries", "latency_s"]


def test_per_arm_totals_by_hand():
    got = arm_accounting(pd.DataFrame(ROWS, columns=COLS))
    a = got["a"]
    assert (a["episodes"], a["error_rows"], a["deals"], a["retries"]) == (3, 1, 1, 8)
    assert a["deal_rate"] == 0.5 and a["mean_S"] == pytest.approx(0.25)  # error rows are not scored
    assert (a["tokens_in_seller"], a["tokens_out_seller"], a["tokens_in_buyer"], a["tokens_out_buyer"]) == \
        (4500, 450, 6000, 600)
    assert a["cost_usd"] == pytest.approx(0.045) and a["usd_per_episode"] == pytest.approx(0.015)
    assert a["latency_s_per_episode"] == pytest.approx(7.0 / 3)
    assert a["by_buyer"]["y"]["episodes"] == 1 and a["by_buyer"]["y"]["mean_S"] is None
    assert a["by_buyer"]["x"]["usd_per_episode"] == pytest.approx(0.02)


def test_an_unknown_price_makes_the_dollar_figures_unknown_not_zero():
    b = arm_accounting(pd.DataFrame(ROWS, columns=COLS))["b"]
    assert (b["cost_known"], b["cost_usd"], b["usd_per_episode"]) == (False, None, None)


def test_empty_table():
    assert arm_accounting(pd.DataFrame(columns=COLS)) == {}
