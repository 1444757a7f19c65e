"""The paper study's report labels and Tables 7-8 as the paper prints them (from the protocol and
registry alone; the scores come from results)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from negotiation.analysis._tables import Report
from negotiation.analysis._tables_compute import table7, table8
from negotiation.pipeline import registry_inputs
from negotiation.registry import load_registry
from negotiation.study import load_study


def _report() -> Report:
    study, registry = load_study("paper"), load_registry("paper")
    arms = {**study.arms, **registry.added}
    result = SimpleNamespace(arm_table=pd.DataFrame({"S": [0.5] * len(arms)}, index=list(arms)), contrasts=[],
                             dagger=set())
    return Report(result, study.protocol, arms, served=registry_inputs(study).served)


def test_step_labels_are_the_steps_the_paper_read():
    r = _report()
    steps = {name: r.step(name) for name in r.trained()}
    assert all(steps[a] == "56" for a in ("e2b_lr3x_56", "e2b_lr10x_56", "12b_lr3x_56", "e4b_shared_56",
                                          "31b_shared_56", "e4b_lr3x_56", "31b_lr3x_56"))
    assert (steps["31b_shared_40"], steps["e2b_shared_64"], steps["31b_shared_104"]) == ("40", "64", "104")


def test_table_8_is_the_paper_s_with_the_served_accelerators():
    rows = {row[0]: row[1:] for row in table8(_report()).rows}
    assert rows["Eval serving accelerators (48 GB)"] == ["1", "1", "1", "4"]  # deviation 17; frozen 2
    assert rows["Relative FLOPs/step (effective params)"] == ["1.0×", "2.0×", "5.2×", "13.3×"]
    assert rows["Relative FLOPs/step (total params)"] == ["1.0×", "1.6×", "2.3×", "6.0×"]
    assert rows["Generation memory fraction"] == ["0.45", "0.40", "0.35", "0.30"]
    assert rows["Train tensor-parallel degree"] == ["1", "1", "1", "4"]


def test_table_7_serves_31b_on_four_48gb_accelerators_and_references_via_api():
    rows = {row[0]: row[1:4] for row in table7(_report()).rows}
    assert rows["31b_shared_104"] == ["30.7B", "4", "192"] and rows["31b_base"] == ["30.7B", "4", "192"]
    assert rows["e2b_lr3x_56"] == ["2.3B / 5.1B", "1", "48"] and rows["ref_claude_sonnet_5"] == ["—", "—", "—"]


def _contrast(name: str, mean: float, low: float, high: float):
    interval = SimpleNamespace(mean=mean, ci=(low, high), excludes_zero=low > 0 or high < 0, half_width=(high - low) / 2)
    return SimpleNamespace(spec=SimpleNamespace(name=name), interval=interval, mark="")


def test_the_held_out_doubling_rule_is_met_twice_as_the_paper_states():
    from negotiation.analysis._tables import _doubling_note, doubling_arms

    r = _report()
    assert doubling_arms(r) == ["31b_shared_104", "31b_lr3x_56"]  # not the initial run's intermediate reads
    held = {"31b_shared_104": (0.008, -0.019, 0.037), "31b_lr3x_56": (0.006, -0.030, 0.040),
            "31b_shared_56": (-0.025, -0.060, 0.010)}  # Appendix C
    r.contrasts = {f"{a} - 31b_base [held out]": _contrast(f"{a} - 31b_base [held out]", *v) for a, v in held.items()}
    note = _doubling_note(r)
    assert note.startswith("Doubling rule (31b, ×2): met 2 times") and "31b_shared_56" not in note
    assert "31b_shared_104 +0.008 [-0.019, +0.037]" in note and "31b_lr3x_56 +0.006 [-0.030, +0.040]" in note


def test_figure_3a_positions_are_the_paper_s():
    from negotiation.analysis._figures import figure3a_points

    r = _report()
    assert {size: [step for step, _ in figure3a_points(r, size)] for size in ("e2b", "e4b", "12b", "31b")} == {
        "e2b": [64, 104], "e4b": [56, 104], "12b": [64, 104], "31b": [56, 104]}


def test_two_reads_of_one_run_are_contrasted_later_minus_earlier():
    from negotiation.analysis._analysis import default_contrasts
    from negotiation.analysis._metrics import context_from_protocol

    study, registry = load_study("paper"), load_registry("paper")
    arms = {**study.arms, **registry.added}
    names = {s.name for s in default_contrasts(study.protocol, arms, list(arms), context_from_protocol(study.protocol))}
    assert {"e4b_lr3x_64 - e4b_lr3x_56", "31b_shared_56 - 31b_shared_40"} <= names  # §5 within-run stability
    assert "e4b_lr3x_56 - e4b_lr3x_64" not in names


def test_figure_2_families_are_the_paper_s_with_the_steps_read():
    from negotiation.analysis._figures import _families

    assert _families(_report()) == {
        "shared LR, 104 steps": ["e2b_shared_104", "e4b_shared_104", "12b_shared_104", "31b_shared_104"],
        "3× LR, step 56": ["e2b_lr3x_56", "e4b_lr3x_56", "12b_lr3x_56", "31b_lr3x_56"]}
