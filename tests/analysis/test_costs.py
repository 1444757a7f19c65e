"""Frontier cost per episode from token counts and the registry's prices (Table 7, App. G)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from negotiation.analysis._costs import frontier_costs
from negotiation.study import TokenPrices, load_study, load_token_prices
from tests.analysis.frames import episode, frame

PRICES = TokenPrices(version=1, study="paper", source="project", reason="test", prices={
    "anthropic/claude-sonnet-5": {"usd_per_mtok_in": 3.0, "usd_per_mtok_out": 15.0, "source": "test"},
    "openai/gpt-5.6-terra": {"usd_per_mtok_in": 1.25, "usd_per_mtok_out": 10.0, "source": "test"}})


def _cell(arm, buyer, n, tokens):
    rows = [episode(arm, "used_car", seed, buyer, study="paper") for seed in range(n)]
    for row in rows:
        row.update(zip(("tokens_in_seller", "tokens_out_seller", "tokens_in_buyer", "tokens_out_buyer"), tokens))
    return rows


def test_both_sides_are_billed_at_their_own_model_s_price():
    protocol = load_study("paper").protocol
    arms = {"ref_claude_sonnet_5": SimpleNamespace(kind="reference", seller="litellm:anthropic/claude-sonnet-5"),
            "x": SimpleNamespace(kind="trained", seller="vllm:{checkpoint}")}
    frames = {"ref_claude_sonnet_5": frame(_cell("ref_claude_sonnet_5", "gpt_5_6_terra", 4, (10_000, 1_000, 8_000, 500))
                                           + _cell("ref_claude_sonnet_5", "claude_sonnet_5", 2, (1e6, 0, 0, 1e5))),
              "x": frame(_cell("x", "gpt_5_6_terra", 1, (1, 1, 1, 1)))}
    costs = frontier_costs(frames, arms, protocol, PRICES).set_index("buyer")
    terra = (10_000 * 3 + 1_000 * 15 + 8_000 * 1.25 + 500 * 10) / 1e6  # seller at Sonnet's, buyer at Terra's
    assert costs.loc["gpt_5_6_terra", "usd_per_episode"] == pytest.approx(terra)
    assert costs.loc["claude_sonnet_5", "usd_per_episode"] == pytest.approx((1e6 * 3 + 1e5 * 15) / 1e6)
    assert costs.loc["gpt_5_6_terra", "tokens_in"] == 4 * 18_000 and len(costs) == 2  # trained arms not priced
    unpriced = frontier_costs(frames, arms, protocol, None)
    assert unpriced["usd_per_episode"].isna().all() and unpriced["tokens_out"].notna().all()


def test_the_paper_s_prices_are_the_project_s_and_bracket_its_figure():
    prices = load_token_prices("paper")
    assert prices.source == "project" and set(prices.prices) == {"anthropic/claude-sonnet-5", "openai/gpt-5.6-terra"}
    low, high = ((37.1 * p.usd_per_mtok_in + 5.2 * p.usd_per_mtok_out) / 2304
                 for p in sorted(prices.prices.values(), key=lambda p: p.usd_per_mtok_in))
    assert low < 0.069 < high  # the paper's $0.069 over 37.1M in / 5.2M out tokens, 2,304 episodes
