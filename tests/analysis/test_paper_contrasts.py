"""The contrasts the paper reports in its text, Table 1 in its layout, and the roles behind them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from negotiation.analysis._analysis import default_contrasts
from negotiation.analysis._bootstrap import BootstrapSettings
from negotiation.analysis._contrast import contrast_values, run_family
from negotiation.analysis._metrics import context_from_protocol
from negotiation.analysis._paired import PairedTables
from negotiation.analysis._roles import size_roles, table_rate, text_contrasts
from negotiation.analysis._tables import Report
from negotiation.study import ContrastSpec, load_study
from negotiation.pipeline import registry_inputs
from negotiation.registry import load_registry

from tests.analysis.frames import episode, frame


def _paper():
    study, registry = load_study("paper"), load_registry("paper")
    return study.protocol, {**study.arms, **registry.added}, registry


def test_roles_are_the_arms_table_1_and_figure_2_show():
    protocol, arms, _ = _paper()
    roles = size_roles(protocol, arms, list(arms))
    assert [(r.shared_final, r.shared_early, r.by_rate) for r in roles.values()] == [
        ("e2b_shared_104", "e2b_shared_64", {3: "e2b_lr3x_56", 10: "e2b_lr10x_56"}),
        ("e4b_shared_104", "e4b_shared_56", {3: "e4b_lr3x_56"}),  # not the re-read at 64
        ("12b_shared_104", "12b_shared_64", {3: "12b_lr3x_56"}),
        ("31b_shared_104", "31b_shared_56", {3: "31b_lr3x_56"}),  # the branch read, not step 40
    ]
    assert table_rate(roles) == 3


def test_every_contrast_the_paper_reports_is_built():
    protocol, arms, _ = _paper()
    names = {s.name for s in default_contrasts(protocol, arms, list(arms), context_from_protocol(protocol))}
    reported = {
        "31b_lr3x_56 - 12b_lr3x_56",                                   # §5: +0.021 [+0.003, +0.040]
        "31b_shared_56 - 12b_shared_104", "31b_shared_56 - 12b_shared_104 [held out]",  # App. C
        "31b_shared_104 - 12b_shared_104", "31b_shared_104 - 12b_shared_104 [held out]",
        "ref_claude_sonnet_5 - ref_gpt_5_6_terra [training]", "ref_claude_sonnet_5 - ref_gpt_5_6_terra",
        "ref_claude_sonnet_5 - ref_gpt_5_6_terra [held out]",           # App. C: Sonnet 5 − Terra by panel
        "e4b_lr3x_64 - e4b_lr3x_56",                                    # §5: −0.003 [−0.015, +0.008]
        "e2b_lr10x_56 - e2b_base [vs gpt_5_6_terra]", "e2b_lr10x_56 - e2b_base [vs claude_sonnet_5]",
        "e2b_lr10x_56 - e2b_base [buyer split]",                        # App. E: +0.124 [+0.089, +0.160]
        "e2b_lr10x_56 - e2b_lr3x_56",                                   # App. E: +0.013 [−0.010, +0.035]
        "31b_shared_104 - 31b_base [buyer_u_integ]",                    # §5: −0.040 [−0.051, −0.029]
        "e4b_shared_104 - e4b_base [seller_u_integ_minus_dist]",        # §5: +0.012 [+0.001, +0.024]
        "12b_lr3x_56 - 12b_shared_64", "12b_lr3x_56 - 12b_shared_104",  # Table 1, columns 5 and 6
    }
    assert reported <= names


def _two_arms() -> dict[str, pd.DataFrame]:
    rows = {"a": [], "b": []}
    rng = np.random.default_rng(0)
    for seed in range(6):
        for buyer in ("same", "other"):
            for domain in ("d1", "d2"):
                for arm in rows:
                    rows[arm].append(episode(arm, domain, seed, buyer, seller_u=float(rng.uniform(0.2, 0.9)),
                                             deal=bool(rng.random() > 0.2)))
    return {arm: frame(r) for arm, r in rows.items()}


def test_a_gain_against_one_buyer_pairs_that_buyer_s_episodes_only():
    frames = _two_arms()
    spec = ContrastSpec(name="a - b [vs same]", weights={"a": 1.0, "b": -1.0}, buyers=("same",))
    values = contrast_values(frames, spec)
    a, b = (frames[x][frames[x]["buyer"] == "same"].set_index(["domain", "seed"])["S"] for x in ("a", "b"))
    assert np.allclose(np.sort(values.to_numpy()), np.sort((a - b).to_numpy()))
    fast, clusters = PairedTables(frames).values(spec)
    assert np.allclose(np.sort(fast), np.sort(values.to_numpy())) and len(clusters) == len(values)


def test_integrative_minus_distributive_is_the_difference_of_the_two_gains():
    frames = _two_arms()
    tables = PairedTables(frames)
    gap = tables.values(ContrastSpec(name="g", weights={"a": 1, "b": -1}, metric="seller_u_integ_minus_dist"))[0]
    integ = tables.values(ContrastSpec(name="i", weights={"a": 1, "b": -1}, metric="seller_u_integ"))[0]
    dist = tables.values(ContrastSpec(name="d", weights={"a": 1, "b": -1}, metric="seller_u_dist"))[0]
    assert np.allclose(gap, integ - dist)


def test_a_spec_without_buyers_is_written_as_before():
    assert "buyers" not in ContrastSpec(name="x", weights={"a": 1.0}).model_dump(mode="json")
    assert ContrastSpec(name="x", weights={"a": 1.0}, buyers=("b",)).model_dump(mode="json")["buyers"] == ["b"]


def test_the_text_contrasts_come_last_and_leave_the_others_draws_unchanged(demo_root):
    from negotiation.analysis._synthetic import synthetic_tables

    study = load_study("demo", demo_root)
    arms = {**study.arms, **load_registry("demo", demo_root).added}
    episodes, _ = synthetic_tables(study.protocol, list(arms), seed=1, with_turns=False)
    context = context_from_protocol(study.protocol)
    specs = default_contrasts(study.protocol, arms, list(episodes), context)
    extra = text_contrasts(study.protocol, arms, list(episodes), context)
    assert [s.name for s in specs[-len(extra):]] == [s.name for s in extra]
    needs_columns = {"closes_late", "frontier_distance", "nash_distance", "welfare_share"}  # added by run_analysis
    specs, extra = ([s for s in x if s.metric not in needs_columns] for x in (specs, extra))
    settings = BootstrapSettings(resamples=200, level=0.95, alpha=0.05, rerun_resamples=400, mc_z=1.96,
                                 mc_band=0.001, seed=5)
    before = run_family(episodes, specs[:-len(extra)], settings)
    after = run_family(episodes, specs, settings)
    assert [c.interval for c in before] == [c.interval for c in after[:len(before)]]


def _fake(mean: float, name: str):
    interval = SimpleNamespace(mean=mean, ci=(mean - 0.01, mean + 0.01), excludes_zero=True)
    return SimpleNamespace(spec=SimpleNamespace(name=name), interval=interval, mark="e")


def test_table_1_has_the_paper_s_rows_columns_and_step_labels():
    from negotiation.analysis._tables_paper import table1_paper

    protocol, arms, _ = _paper()
    roles = size_roles(protocol, arms, list(arms))
    names = []
    for role in roles.values():
        high = role.by_rate[3]
        names += [f"{role.shared_final} - {role.base}", f"{high} - {role.base}", f"{high} - {role.shared_early}",
                  f"{high} - {role.shared_final}"]
    contrasts = [_fake(0.001 * i, n) for i, n in enumerate(names)]
    result = SimpleNamespace(arm_table=pd.DataFrame({"S": [0.5] * len(arms)}, index=list(arms)),
                             contrasts=contrasts, dagger={"31b_lr3x_56"})
    table = table1_paper(Report(result, protocol, arms, served=registry_inputs(load_study("paper")).served))
    assert table.headers == ["Size", "3× LR S", "− base: shared LR", "− base: 3× LR",
                             "3× − shared: early ckpt (56 v. 56/64)", "3× − shared: @104 steps"]
    assert [row[0] for row in table.rows] == ["2.3B", "4.5B", "12B", "31B"]
    assert table.rows[0][2:] == ["+0.000e [-0.010, +0.010]", "+0.001e [-0.009, +0.011]",
                                 "+0.002e [-0.008, +0.012]", "+0.003e [-0.007, +0.013]"]
    assert table.rows[3][5].endswith("†") and not table.rows[2][5].endswith("†")


@pytest.mark.parametrize("study", ["demo"])
def test_the_demo_gets_the_same_layout(study, demo_root):
    loaded = load_study(study, demo_root)
    roles = size_roles(loaded.protocol, loaded.arms, list(loaded.arms))
    assert table_rate(roles) == 3
    assert all(r.shared_early and r.shared_final and r.base for r in roles.values())
