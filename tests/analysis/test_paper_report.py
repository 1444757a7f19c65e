"""The paper study's report built from synthetic results: Tables 1–9 and Figures 2–3 with the paper's
rows, columns and step labels (slow: 21 arms x 1,152 episodes)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def paper_report(tmp_path_factory):
    from negotiation.analysis import report_results, write_synthetic_results
    from negotiation.pipeline import registry_inputs
    from negotiation.study import load_study

    context = load_study("paper")
    results = write_synthetic_results(context.protocol, list(context.arms), tmp_path_factory.mktemp("paper_results"), 3).dir
    out = tmp_path_factory.mktemp("paper_report")
    paths = report_results(context, results, out, registry_inputs(context, results), seed=0, resamples=500)
    return paths, paths["report.md"].read_text(encoding="utf-8")


def _table(markdown: str, caption_start: str) -> list[list[str]]:
    block = markdown[markdown.index(f"**{caption_start}"):].split("\n\n")[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines() if not line.startswith("|--")]


def test_every_table_and_figure_of_the_paper_is_in_the_report(paper_report):
    paths, md = paper_report
    for n in range(1, 10):
        assert f"**Table {n}:" in md
    assert {"figures/figure2a.png", "figures/figure2b.png", "figures/figure3a.png", "figures/figure3b.png"} <= set(paths)


def test_table_1_has_the_paper_s_rows_and_columns(paper_report):
    rows = _table(paper_report[1], "Table 1:")
    assert rows[0] == ["Size", "3× LR S", "− base: shared LR", "− base: 3× LR",
                       "3× − shared: early ckpt (56 v. 56/64)", "3× − shared: @104 steps"]
    assert [r[0] for r in rows[1:]] == ["2.3B", "4.5B", "12B", "31B"]
    assert all(r[2].split()[0].endswith("*") or "[" in r[2] for r in rows[1:])  # primary contrasts with intervals


def test_tables_3_4_and_6_label_each_arm_with_the_step_it_was_read_at(paper_report):
    md = paper_report[1]
    steps = {r[0].rstrip("†"): r[2] for r in _table(md, "Table 4:")[1:]}
    assert {a: steps[a] for a in ("e4b_shared_56", "31b_shared_40", "e2b_shared_64", "e4b_lr3x_64", "12b_lr3x_56",
                                  "e2b_lr10x_56", "31b_shared_104", "e2b_base")} == {
        "e4b_shared_56": "56", "31b_shared_40": "40", "e2b_shared_64": "64", "e4b_lr3x_64": "64", "12b_lr3x_56": "56",
        "e2b_lr10x_56": "56", "31b_shared_104": "104", "e2b_base": "—"}
    roles = {r[1].rstrip("†"): r[2] for r in _table(md, "Table 6:")[1:]}
    assert roles["31b_lr3x_56"] == "3× LR, step 56" and roles["31b_shared_56"] == "1× LR, step 56"
    assert [r[0].rstrip("†") for r in _table(md, "Table 3:")[1:]] == [
        "e2b_base", "e4b_base", "12b_base", "31b_base", "e2b_shared_104", "e4b_shared_104", "12b_shared_104",
        "31b_shared_104", "ref_claude_sonnet_5", "ref_gpt_5_6_terra"]


def test_table_8_and_the_text_contrasts_are_the_paper_s(paper_report):
    md = paper_report[1]
    table8 = {r[0]: r[1:] for r in _table(md, "Table 8:")}
    assert table8["Eval serving accelerators (48 GB)"] == ["1", "1", "1", "4"]
    contrasts = {r[0].replace("†", "") for r in _table(md, "Contrasts the paper reports")[1:]}
    assert {"31b_lr3x_56 − 12b_lr3x_56", "31b_shared_56 − 12b_shared_104", "e4b_lr3x_64 − e4b_lr3x_56",
            "ref_claude_sonnet_5 − ref_gpt_5_6_terra"} <= contrasts
    cells = _table(md, "Frontier cost per episode")[1:]
    assert len(cells) == 4 and all(float(c[5]) > 0 for c in cells)  # two reference sellers x two buyers
    assert "The reference point for the API-served sellers is $" in md
