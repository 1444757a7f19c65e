"""The paper's own read points and pilot results (Table 4, Appendix K) are all covered by its log."""

from __future__ import annotations

import datetime as dt

import re
import shutil
from pathlib import Path

import pytest
import yaml

from negotiation.study import (
    PilotCell,
    PilotRecord,
    ResultsLayout,
    SamplingRecord,
    SamplingUse,
    SelectionRecord,
    load_study,
    protocol_hash,
    write_record,
)
from negotiation.registry import load_registry, run_audit
from negotiation.registry._deviation_index import append_to_index

# arm -> (parent step it branched from, saved own steps, step read), as the paper reports them (Table 4,
# Appendix K). A reproduction saves every checkpoint (no upload fault), so each read is the declared one.
ALL_64 = tuple(range(8, 65, 8))
READS = {
    "e2b_shared_64": (None, ALL_64, 64), "e4b_shared_56": (None, ALL_64, 56), "12b_shared_64": (None, ALL_64, 64),
    "31b_shared_40": (None, ALL_64, 40), "31b_shared_56": (None, ALL_64, 56),
    "e2b_shared_104": (64, range(8, 41, 8), 40), "e4b_shared_104": (56, range(8, 49, 8), 48),
    "12b_shared_104": (64, range(8, 41, 8), 40), "31b_shared_104": (56, range(8, 49, 8), 48),
    "e2b_lr3x_56": (None, ALL_64, 56), "e4b_lr3x_56": (None, ALL_64, 56), "e4b_lr3x_64": (None, ALL_64, 64),
    "12b_lr3x_56": (None, ALL_64, 56), "31b_lr3x_56": (None, ALL_64, 56), "e2b_lr10x_56": (None, ALL_64, 56),
}


def _write_selection(study, layout, digest, arm, definition, parent, available, step, rule=None):
    rule = study.read_step(definition) - (parent or 0) if rule is None else rule
    write_record(SelectionRecord(
        version=1, study="paper", arm=arm, run=definition.run, parent_step=parent, rule_step=rule, step=step,
        substitution=step != rule, available_steps=tuple(available), checkpoint=f"ckpt/{arm}/step_{step}",
        protocol_hash=digest), layout.selection(arm))


@pytest.fixture
def paper_results(root: Path) -> Path:
    study = load_study("paper", root)
    arms = {**study.arms, **load_registry("paper", root).added}
    digest, layout = protocol_hash("paper", root), ResultsLayout(root / "outputs/paper")
    for arm, definition in arms.items():
        if arm in READS:
            _write_selection(study, layout, digest, arm, definition, *READS[arm])
        bad = {"claude_sonnet_5": 3} if arm == "e2b_lr10x_56" else {}  # 3 bad parses in 54 turns
        cells = tuple(PilotCell(buyer=b, episodes=9, turns=54, bad_parses=bad.get(b, 0), passed=not bad.get(b))
                      for b in study.protocol.buyers.evaluation)
        write_record(PilotRecord(version=1, study="paper", arm=arm, passed=not bad, cells=cells, protocol_hash=digest),
                     layout.pilot(arm))
    return root


_WHERE = re.compile(r"arms\.(\w+)\.read_step:|continuations\.(\w+): branches|/(\w+)(?:/selection)?\.json:")


def _covered(report) -> dict[tuple[str, str], tuple[int, ...]]:
    return {(f.check, next(g for g in _WHERE.search(f.evidence).groups() if g)): f.deviations
            for f in report.findings if f.status == "covered" and f.check != "arms"}


def _read_points(report) -> dict[str, str]:
    return {re.match(r"(\w+):|outputs/paper/select/(\w+)/", f.evidence).group(1) or
            re.match(r"outputs/paper/select/(\w+)/", f.evidence).group(1): f.status
            for f in report.findings if f.check == "read_points"}


def test_every_departure_the_paper_reports_is_covered_by_its_log(paper_results):
    report = run_audit("paper", root=paper_results)
    assert report.passed, [f.evidence for f in report.findings if f.status == "fail"]
    # Each arm is declared at the step the paper read, and the entry's deviations say why; the
    # 4.5B and 31B continuations branch at 56 as registry data covered by entry 8.
    assert _covered(report) == {
        ("read_steps", "e4b_shared_56"): (3, 15), ("read_steps", "31b_shared_56"): (3, 15),
        ("read_steps", "31b_shared_40"): (15,), ("read_steps", "e2b_lr3x_56"): (4, 6),
        ("read_steps", "e2b_lr10x_56"): (4, 6), ("read_steps", "12b_lr3x_56"): (5, 6),
        ("read_steps", "e4b_lr3x_56"): (6,), ("read_steps", "31b_lr3x_56"): (6,),
        ("continuations", "e4b_shared_cont"): (8,), ("continuations", "31b_shared_cont"): (8,),
        ("pilot_gate", "e2b_lr10x_56"): (7,),
    }
    assert set(_read_points(report).values()) == {"pass"} and len(_read_points(report)) == len(READS)


@pytest.mark.parametrize("arm", ["e2b_lr3x_56", "e2b_lr10x_56", "12b_lr3x_56", "e4b_shared_56", "31b_shared_56",
                                 "e4b_lr3x_56", "31b_lr3x_56"])
def test_a_56_arm_read_at_64_fails_even_where_a_deviation_names_the_arm(paper_results, arm):
    study = load_study("paper", paper_results)
    definition = load_registry("paper", paper_results).added[arm]
    layout, digest = ResultsLayout(paper_results / "outputs/paper"), protocol_hash("paper", paper_results)
    for rule in (64, 56):  # the old rule's record, and a record that admits the declared 56
        _write_selection(study, layout, digest, arm, definition, None, ALL_64, 64, rule=rule)
        report = run_audit("paper", root=paper_results)
        assert not report.passed and _read_points(report)[arm] == "fail"


def test_the_31b_continuation_must_branch_where_the_registry_says(paper_results):
    study = load_study("paper", paper_results)
    layout, digest = ResultsLayout(paper_results / "outputs/paper"), protocol_hash("paper", paper_results)
    _write_selection(study, layout, digest, "31b_shared_104", study.arms["31b_shared_104"], 64, range(8, 41, 8), 40)
    failed = [f.evidence for f in run_audit("paper", root=paper_results).findings if f.status == "fail"]
    assert failed == ["outputs/paper/select/31b_shared_104/selection.json:parent_step: continuation branched at 64, "
                      "but 31b_shared_cont branches at 56 (registry continuations or the rule)"]


def test_superseding_an_entry_withdraws_its_coverage(paper_results, edit):
    folder = paper_results / "registry/paper/deviations"
    old = yaml.safe_load((folder / "0004-2-3b-3x-and-10x-lr-arms-read-at-step-56.yaml").read_text())
    new_id = max(int(p.name[:4]) for p in folder.glob("0*.yaml")) + 1
    amended = {**old, "id": new_id, "arms": ["e2b_lr3x_56"], "supersedes": 4, "title": "2.3B 3x arm read at step 56",
               "date": dt.date.today().isoformat()}  # after every entry's date, and not in the future
    (folder / f"{new_id:04d}-2-3b-3x-arm-read-at-step-56.yaml").write_text(yaml.safe_dump(amended, sort_keys=False))
    append_to_index(folder, new_id, folder / f"{new_id:04d}-2-3b-3x-arm-read-at-step-56.yaml")  # as `nego deviation new` does
    edit(paper_results / "registry/paper/arms.yaml", "deviations: [6, 4]\n", f"deviations: [6, {new_id}]\n")
    report = run_audit("paper", root=paper_results)
    problems = [f.evidence for f in report.findings if f.status == "fail"]
    assert problems == ["registry/paper/arms.yaml:added_arms.e2b_lr10x_56.deviations: entry 4 is superseded"]
    assert [f.deviations for f in report.findings if "added_arms.e2b_lr3x_56.read_step" in f.evidence] == [(6, new_id)]
    assert [f.deviations for f in report.findings if "added_arms.e2b_lr10x_56.read_step" in f.evidence] == [(6,)]


def test_the_paper_results_fail_without_the_gate_override(paper_results):
    shutil.move(paper_results / "registry/paper/deviations/0007-10x-lr-sonnet-5-cell-ran-despite-failing-the-pilot-gate.yaml",
                paper_results / "gate.yaml.bak")
    report = run_audit("paper", root=paper_results)
    failed = {f.check for f in report.findings if f.status == "fail"}
    assert {"pilot_gate", "deviation_ids"} <= failed


def test_sonnet_5_rejecting_temperature_is_covered_by_its_own_entry_not_the_harness_revision(paper_results):
    study = load_study("paper", paper_results)
    sampling, digest = study.protocol.sampling, protocol_hash("paper", paper_results)
    layout = ResultsLayout(paper_results / "outputs/paper")
    rejected = SamplingUse(requested=sampling.buyer, accepted=sampling.buyer.model_copy(update={"temperature": None}))
    for arm, seller in (("12b_lr3x_56", sampling.self_served_seller), ("ref_claude_sonnet_5", sampling.reference_seller)):
        accepted = seller.model_copy(update={"temperature": None}) if arm.startswith("ref_claude") else seller
        write_record(SamplingRecord(version=1, study="paper", arm=arm, seller=SamplingUse(requested=seller, accepted=accepted),
                                    buyers={"claude_sonnet_5": rejected,
                                            "gpt_5_6_terra": SamplingUse(requested=sampling.buyer, accepted=sampling.buyer)},
                                    protocol_hash=digest), layout.sampling(arm))
    report = run_audit("paper", root=paper_results)
    rows = [(f.status, f.deviations) for f in report.findings if f.check == "sampling"]
    assert rows == [("covered", (18,))] * 3  # 12B's buyer; the reference seller and its buyer
    shutil.move(paper_results / "registry/paper/deviations/0018-claude-sonnet-5-rejects-the-temperature-parameter.yaml",
                paper_results / "sonnet.yaml.bak")
    assert {f.status for f in run_audit("paper", root=paper_results).findings if f.check == "sampling"} == {"fail"}


def test_the_paper_s_hand_read_guard_is_recorded_not_pending():
    report = run_audit("paper", results_dir=Path("/nonexistent/no-results"))
    rows = [f for f in report.findings if f.check == "hand_read"]
    registry = load_registry("paper")
    trained = {a for a, v in {**load_study("paper").arms, **registry.added}.items() if v.kind == "trained"}
    assert {f.status for f in rows} == {"pass"} and len(rows) == len(trained) == 15
    assert set(registry.signoffs) == trained
    assert all(s.source and "Appendix E" in s.source for s in registry.signoffs.values())
