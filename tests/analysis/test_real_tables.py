"""The metric identities on the pipeline's real tables (the demo's reference arms, evaluated in
the test by the pipeline's own stage functions), where nothing but the engine built the columns."""

import numpy as np
import pytest

from negotiation.analysis import paired_values, score_identity_gap
from negotiation.analysis._analysis import bootstrap_settings, run_analysis
from negotiation.analysis._metrics import context_from_protocol
from negotiation.analysis._results import load_tables
from negotiation.study import load_study

REAL_ARMS = ("ref_boulware", "ref_conceder")  # the arms the real_results fixture evaluates


@pytest.fixture(scope="module")
def real(real_results):
    context = load_study("demo")
    episodes, turns = load_tables(real_results, REAL_ARMS)
    assert sorted(episodes) == sorted(REAL_ARMS) and all(len(e) == 144 for e in episodes.values())
    return context, episodes, turns


def test_every_episode_splits_its_utilities_into_distributive_and_integrative_parts(real):
    _, episodes, _ = real
    for table in episodes.values():
        deals = table[table["deal"]]
        assert len(deals) > 0
        np.testing.assert_allclose(deals["seller_u_dist"] + deals["seller_u_integ"], deals["seller_u"], atol=1e-12)
        np.testing.assert_allclose(deals["buyer_u_dist"] + deals["buyer_u_integ"], deals["buyer_u"], atol=1e-12)
        np.testing.assert_allclose(deals["S"], deals["seller_u"], atol=1e-12)


def test_score_identity_holds_on_every_panel_of_the_real_metrics(real):
    context, episodes, turns = real
    settings = bootstrap_settings(context.protocol, seed=0, resamples=200)
    result = run_analysis(episodes, context.protocol, context.arms, settings, turns=turns)
    metrics_context = context_from_protocol(context.protocol)
    gaps = [score_identity_gap(row, metrics_context) for _, row in result.metrics.iterrows()]
    assert len(gaps) == len(REAL_ARMS) * (3 + 2 + 9) and max(map(abs, gaps)) < 1e-12


def test_table2_parts_sum_to_the_deal_only_change_between_the_real_arms(real):
    _, episodes, _ = real
    weights = {"ref_boulware": 1.0, "ref_conceder": -1.0}
    dist, integ, total, buyer, welfare = (paired_values(episodes, weights, m) for m in (
        "seller_u_dist", "seller_u_integ", "seller_u", "buyer_u", "welfare"))
    assert len(total) > 0
    assert (dist + integ).mean() == pytest.approx(total.mean(), abs=1e-12)
    assert (total + buyer).mean() == pytest.approx(welfare.mean(), abs=1e-12)
