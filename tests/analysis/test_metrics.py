"""Per-arm outcome metrics on a hand-made table, the S identity, and the Table 2 split."""

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.analysis import MetricContext, metrics_table, paired_values, score_identity_gap
from negotiation.analysis._metrics import outcome_summary

from tests.analysis.frames import episode, frame

CONTEXT = MetricContext(no_deal_penalty=0.3, turn_cap=24, converge_turn=16, training_domains=("job",),
                        held_out_domains=("car",), buyer_split=("x", "y"))


def arm_a():
    return frame([
        episode("A", "car", 1, "x", seller_u=0.8, buyer_u=0.5, n_turns=10, n_bad_all=1, n_bad_seller=1),
        episode("A", "car", 1, "y", deal=False, n_turns=24),
        episode("A", "job", 2, "x", seller_u=0.5, buyer_u=0.7, n_turns=17, accept_had_terms=True),
        episode("A", "job", 2, "y", seller_u=0.7, buyer_u=0.2, n_turns=16),
    ])


def test_outcome_summary_by_hand():
    got = outcome_summary(arm_a(), CONTEXT)
    assert got["S"] == pytest.approx((0.8 - 0.3 + 0.5 + 0.7) / 4)
    assert got["deal_rate"] == pytest.approx(0.75)
    assert got["seller_u"] == pytest.approx(2.0 / 3)
    assert got["buyer_u"] == pytest.approx(1.4 / 3)
    assert got["welfare"] == pytest.approx(3.4 / 3)
    assert got["seller_u_dist"] + got["seller_u_integ"] == pytest.approx(got["seller_u"])
    assert got["mean_turns"] == pytest.approx(67 / 4)
    assert got["bad_parse_all"] == pytest.approx(1 / 67)
    assert got["bad_parse_seller"] == pytest.approx(1 / (5 + 12 + 9 + 8))  # ceil(turns / 2) seller turns
    assert got["late_close_share"] == pytest.approx(2 / 3)  # closing turns 10, 17, 16
    assert got["at_cap_share"] == pytest.approx(1 / 4)
    assert got["accept_with_terms_share"] == pytest.approx(1.0)  # the one seller-closed deal (turn 17)


def test_metrics_table_panels_and_buyer_split():
    table = metrics_table({"A": arm_a()}, CONTEXT).set_index("panel")
    assert set(table.index) == {"all", "training", "held_out", "buyer:x", "buyer:y", "domain:car", "domain:job"}
    assert table.loc["all", "buyer_split"] == pytest.approx((0.8 + 0.5) / 2 - (-0.3 + 0.7) / 2)
    assert table.loc["held_out", "S"] == pytest.approx((0.8 - 0.3) / 2)
    assert table.loc["held_out", "episodes"] == 2
    assert pd.isna(table.loc["buyer:x", "buyer_split"])


def test_score_identity_holds_on_every_panel():
    table = metrics_table({"A": arm_a()}, CONTEXT)
    for _, row in table.iterrows():
        assert score_identity_gap(row, CONTEXT) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=30))
def test_score_identity_on_random_arms(utilities):
    rows = [episode("A", "d", i, "x", deal=u is not None, seller_u=u if u is not None else 0.5)
            for i, u in enumerate(utilities)]
    assert score_identity_gap(outcome_summary(frame(rows), CONTEXT), CONTEXT) == pytest.approx(0.0, abs=1e-12)


def test_table2_parts_sum_to_the_deal_only_change():
    base = frame([
        episode("B", "d", 1, "x", seller_u=0.6, seller_dist=0.25, buyer_u=0.5, buyer_dist=0.2),
        episode("B", "d", 2, "x", seller_u=0.4, seller_dist=0.1, buyer_u=0.6, buyer_dist=0.3),
        episode("B", "d", 3, "x", deal=False),
    ])
    arm = frame([
        episode("A", "d", 1, "x", seller_u=0.7, seller_dist=0.4, buyer_u=0.45, buyer_dist=0.15),
        episode("A", "d", 2, "x", deal=False),
        episode("A", "d", 3, "x", seller_u=0.9),
    ])
    frames, weights = {"A": arm, "B": base}, {"A": 1.0, "B": -1.0}
    dist = paired_values(frames, weights, "seller_u_dist")
    integ = paired_values(frames, weights, "seller_u_integ")
    total = paired_values(frames, weights, "seller_u")
    buyer = paired_values(frames, weights, "buyer_u")
    welfare = paired_values(frames, weights, "welfare")
    # Only seed 1 was closed by both: dist +0.15, integ (0.3 - 0.35) = -0.05, total +0.1.
    assert list(total.index) == [("d", 1, "x")]
    assert dist.iloc[0] == pytest.approx(0.15) and integ.iloc[0] == pytest.approx(-0.05)
    assert (dist + integ).iloc[0] == pytest.approx(total.iloc[0])
    assert (dist + integ + buyer).iloc[0] == pytest.approx(welfare.iloc[0])


def test_missing_column_is_named():
    with pytest.raises(Exception, match="A:closing_turn: column missing"):
        metrics_table({"A": arm_a().drop(columns=["closing_turn"])}, CONTEXT)


def test_table_split_matches_the_direct_definition():
    from negotiation.analysis._metrics import buyer_split

    table = metrics_table({"A": arm_a()}, CONTEXT).set_index("panel")
    assert table.loc["all", "buyer_split"] == pytest.approx(buyer_split(arm_a(), ("x", "y")))
    assert table.loc["domain:car", "buyer_split"] == pytest.approx(0.8 - (-0.3))
