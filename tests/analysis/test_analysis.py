"""run_analysis on the synthetic demo: identities on every arm, Table 2 additivity, the audit's contrast check."""

import json

import numpy as np
import pytest

from negotiation.analysis import score_identity_gap
from negotiation.study import ContrastResult
from negotiation.analysis._analysis import run_analysis, bootstrap_settings, write_analysis
from negotiation.analysis._metrics import context_from_protocol
from negotiation.study import load_study
from negotiation.analysis._results import load_tables


@pytest.fixture(scope="module")
def analysed(demo_root, demo_results):
    context = load_study("demo", demo_root)
    episodes, turns = load_tables(demo_results, context.arms)
    settings = bootstrap_settings(context.protocol, seed=1, resamples=1000)
    return context, run_analysis(episodes, context.protocol, context.arms, settings, turns=turns)


def test_score_identity_holds_on_every_arm_and_panel(analysed):
    context, result = analysed
    metrics_context = context_from_protocol(context.protocol)
    gaps = [score_identity_gap(row, metrics_context) for _, row in result.metrics.iterrows()]
    assert len(gaps) == 19 * (3 + 2 + 9) and max(map(abs, gaps)) < 1e-12


def test_table2_parts_sum_to_the_deal_only_change_for_every_trained_arm(analysed):
    _, result = analysed
    by_name = {c.spec.name: c.interval.mean for c in result.contrasts}
    pairs = [n[: -len(" [seller_u]")] for n in by_name if n.endswith(" [seller_u]")]
    assert len(pairs) == 13
    for pair in pairs:
        parts = by_name[f"{pair} [seller_u_dist]"] + by_name[f"{pair} [seller_u_integ]"]
        assert parts == pytest.approx(by_name[f"{pair} [seller_u]"], abs=1e-12)
        assert parts + by_name[f"{pair} [buyer_u]"] == pytest.approx(by_name[f"{pair} [welfare]"], abs=1e-12)


def test_primary_family_and_marks(analysed):
    context, result = analysed
    primary = [c for c in result.contrasts if c.spec.primary]
    assert [c.spec.name for c in primary] == [f"{c.arm} - {c.reference}" for c in context.protocol.statistics.primary_family]
    for c in result.contrasts:
        if c.spec.primary:
            assert c.mark == ("*" if c.holm_rejected else "") and c.holm_p >= c.interval.p
        else:
            assert c.mark == ("e" if c.interval.excludes_zero else "") and c.holm_p is None


def test_written_contrasts_pass_the_audit_check(analysed, demo_root, tmp_path):
    from negotiation.registry import run_audit

    context, result = analysed
    paths = write_analysis(result, tmp_path / "analyze", "demo")
    payload = json.loads(paths["contrasts.json"].read_text())
    assert [ContrastResult.model_validate(c) for c in payload["contrasts"]] == result.contrasts
    report = run_audit("demo", root=demo_root, results_dir=tmp_path)
    assert [f.status for f in report.findings if f.check == "contrasts"] == ["pass"]
    frontiers = json.loads(paths["frontiers.json"].read_text())["scenarios"]
    assert len(frontiers) == 9 * 8 and all(np.diff(np.array(f["pareto"])[:, 0]).min() >= 0 for f in frontiers)


def test_same_seed_same_family(analysed, demo_results):
    context, result = analysed
    episodes, turns = load_tables(demo_results, context.arms)
    settings = bootstrap_settings(context.protocol, seed=1, resamples=1000)
    again = run_analysis(episodes, context.protocol, context.arms, settings, turns=turns)
    assert again.contrasts == result.contrasts and again.levels == result.levels


def test_tables_and_figures_for_a_study_with_reference_arms_only(demo_root, demo_results):
    from negotiation.analysis._figures import FIGURES
    from negotiation.analysis._report import BUILDERS
    from negotiation.analysis._tables import Report

    context = load_study("demo", demo_root)
    episodes, turns = load_tables(demo_results, ["ref_boulware", "ref_conceder"])
    settings = bootstrap_settings(context.protocol, seed=0, resamples=500)
    result = run_analysis(episodes, context.protocol, context.arms, settings, turns=turns)
    # No primary arm and no base: only the reference sellers against each other, by panel (App. C).
    assert [c.spec.name for c in result.contrasts] == [
        "ref_boulware - ref_conceder [training]", "ref_boulware - ref_conceder", "ref_boulware - ref_conceder [held out]"]
    report = Report(result, context.protocol, context.arms)
    tables = {t.key: t for t in (build(report) for build in BUILDERS)}
    assert len(tables["table4"].rows) == 2 and tables["table1"].rows == [] and tables["guards"].rows == []
    assert all(png.startswith(b"\x89PNG") for png in (draw(report) for draw in FIGURES.values()))
