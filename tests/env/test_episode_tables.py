"""Episode and turn tables: the columns of docs/architecture.md, values, deterministic bytes."""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.agents import make_agent
from negotiation.env import (
    KEY, Negotiation, episode_row, episodes_to_frames, error_row, load_domain, load_domains, make_scenario,
    run_episode, write_tables,
)
from tests.env.toy_env import Replay, env_config, message

EPISODE_COLUMNS = (
    "arm domain seed buyer study seller phase outcome deal S seller_u buyer_u seller_u_dist "
    "seller_u_integ buyer_u_dist buyer_u_integ reward n_turns n_rounds n_seller_turns n_bad_seller "
    "n_bad_all closed_by closing_turn accept_had_terms n_json_leak n_placeholder n_template_tag "
    "n_off_schema n_invalid n_out_of_range final_ledger error_class error_message record_version"
).split()
TURN_COLUMNS = (
    "arm domain seed buyer turn role raw prose ok action terms error ledger_after flag_json_leak "
    "flag_placeholder flag_template_tag n_off_schema n_invalid n_out_of_range"
).split()


def _two_episodes(toy):
    deal = run_episode(toy, Replay("s", [message("COUNTER", "Hi [Name].", price=80, warranty=1),
                                         message("ACCEPT")]),
                       Replay("b", [message("COUNTER", price=60)]), env_config())
    no_deal = run_episode(toy, Replay("s", [message("COUNTER", price=90)]),
                          Replay("b", ["nothing parsable"]), env_config())
    return deal, no_deal


def test_frames_have_the_contract_columns_and_one_row_each(toy):
    eps, turns = episodes_to_frames(_two_episodes(toy), {"arm": "demo-arm", "study": "demo", "buyer": "b"})
    assert set(EPISODE_COLUMNS) <= set(eps.columns) and set(KEY) <= set(eps.columns)
    assert set(TURN_COLUMNS) <= set(turns.columns)
    assert len(eps) == 2 and len(turns) == 3 + 24
    assert eps["arm"].tolist() == ["demo-arm", "demo-arm"] and eps["buyer_spec"].tolist() == ["b", "b"]


def test_deal_row_values_by_hand(toy):
    eps, turns = episodes_to_frames(_two_episodes(toy), {"arm": "a", "study": "demo"})
    deal = eps.iloc[0]
    # final ledger price 60: seller U = .4 * .2 = .08 -> Ũ .54; buyer U = .2 * -.2 -> Ũ .48
    assert (deal.outcome, deal.deal, deal.closed_by, deal.closing_turn) == ("deal", True, "seller", 3.0)
    assert deal.S == pytest.approx(0.54) and deal.seller_u == pytest.approx(0.54)
    assert deal.buyer_u == pytest.approx(0.48)
    assert deal.seller_u_dist + deal.seller_u_integ == pytest.approx(deal.seller_u)
    assert deal.reward == pytest.approx(0.54)
    assert json.loads(deal.final_ledger) == {"price": 60, "warranty": 1}
    assert (deal.n_placeholder, deal.n_off_schema, deal.n_rounds, deal.n_seller_turns) == (1, 1, 2, 2)
    first = turns.iloc[0]
    assert (first.turn, first.role, first.ok, first.action) == (1, "seller", True, "COUNTER")
    assert json.loads(first.terms) == [["price", 80], ["warranty", 1]]
    assert bool(first.flag_placeholder) and first.prose == "Hi [Name]."


def test_no_deal_row_has_nan_scores_and_counts_bad_turns(toy):
    eps, turns = episodes_to_frames(_two_episodes(toy), {"arm": "a"})
    nd = eps.iloc[1]
    assert (nd.outcome, nd.deal, nd.S, nd.closed_by) == ("no_deal", False, -0.3, "")
    assert all(math.isnan(nd[c]) for c in ("seller_u", "buyer_u", "seller_u_dist", "closing_turn"))
    assert (nd.n_bad_seller, nd.n_bad_all, nd.n_turns) == (0, 12, 24)
    assert nd.reward == pytest.approx(-0.35)
    bad = turns[(turns.seed == toy.seed) & (turns.role == "buyer")].iloc[-1]
    assert (bool(bad.ok), bad.error, bad.action) == (False, "no_action", "")


def test_an_error_row_has_the_played_rows_columns_order_and_types(toy):
    """The harness's error row and the engine's row are one schema: a table mixing them keeps
    every column's type (no int column turned float, no column missing from either)."""
    extra = {"arm": "a", "study": "demo", "buyer": "b", "attempt": 1, "prompt_hash": "", "cost_known": True}
    game = Negotiation(toy, env_config())
    game.apply(message("COUNTER", price=80))
    game.apply(message("COUNTER", price=60))
    failed = error_row(game, "s", "b", extra, error_class="BadRequestError", error_message="seller call at turn 3: x",
                       retries=2)
    for played in map(lambda e: episode_row(e, extra), _two_episodes(toy)):
        assert list(failed) == list(played)
        assert pd.DataFrame([failed]).dtypes.to_dict() == pd.DataFrame([played]).dtypes.to_dict()
    assert (failed["outcome"], failed["deal"], failed["n_turns"], failed["n_rounds"]) == ("error", False, 2, 1)
    assert all(math.isnan(failed[c]) for c in ("S", "seller_u", "buyer_u", "reward", "closing_turn"))
    assert json.loads(failed["final_ledger"]) == {"price": 60} and failed["retries"] == 2


def test_write_tables_round_trips(toy, tmp_path):
    eps, turns = episodes_to_frames(_two_episodes(toy), {"arm": "a"})
    p_eps, p_turns = write_tables(eps, turns, tmp_path / "out")
    pd.testing.assert_frame_equal(pd.read_parquet(p_eps), eps)
    pd.testing.assert_frame_equal(pd.read_parquet(p_turns), turns)


def _parquet_bytes(domain_name, seed, seller, buyer):
    scenario = make_scenario(load_domain(domain_name), seed)
    ep = run_episode(scenario, make_agent(seller, "seller"), make_agent(buyer, "buyer"), env_config())
    eps, turns = episodes_to_frames([ep], {"arm": "x", "study": "demo"})
    out = []
    for frame in (eps, turns):
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        out.append(buf.getvalue())
    return out


PERSONAS = ["scripted:boulware", "scripted:conceder", "scripted:linear", "scripted:titfortat",
            "scripted:fixed"]


@settings(max_examples=15, deadline=None)
@given(domain=st.sampled_from(sorted(load_domains())), seed=st.integers(0, 10**7),
       seller=st.sampled_from(PERSONAS), buyer=st.sampled_from(PERSONAS))
def test_same_agents_domain_seed_give_byte_identical_tables(domain, seed, seller, buyer):
    assert _parquet_bytes(domain, seed, seller, buyer) == _parquet_bytes(domain, seed, seller, buyer)
