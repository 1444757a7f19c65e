"""The paper's own read points and pilot results (Table 4, Appendix K) are all covered by its log."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from negotiation.protocol import load_study, protocol_hash
from negotiation.registry import (
    PilotCell,
    PilotRecord,
    ResultsLayout,
    SelectionRecord,
    load_registry,
    run_audit,
    write_record,
)
from negotiation.registry._deviation_index import append_to_index

# arm -> (parent step it branched from, saved own steps, step read), as the paper reports them.
LOST_64 = tuple(range(8, 57, 8))
ALL_64 = tuple(range(8, 65, 8))
READS = {
    "e2b_shared_64": (None, ALL_64, 64), "e4b_shared_56": (None, LOST_64, 56), "12b_shared_64": (None, ALL_64, 64),
    "31b_shared_40": (None, LOST_64, 40), "31b_shared_56": (None, LOST_64, 56),
    "e2b_shared_104": (64, range(8, 41, 8), 40), "e4b_shared_104": (56, range(8, 49, 8), 48),
    "12b_shared_104": (64, range(8, 41, 8), 40), "31b_shared_104": (56, range(8, 49, 8), 48),
    "e2b_lr3x_56": (None, LOST_64, 56), "e4b_lr3x_56": (None, ALL_64, 56), "e4b_lr3x_64": (None, ALL_64, 64),
    "12b_lr3x_56": (None, ALL_64, 56), "31b_lr3x_56": (None, ALL_64, 56), "e2b_lr10x_56": (None, LOST_64, 56),
}


@pytest.fixture
def paper_results(root: Path) -> Path:
    study = load_study("paper", root)
    arms = {**study.arms, **load_registry("paper", root).added}
    digest, layout = protocol_hash("paper", root), ResultsLayout(root / "outputs/paper")
    for arm, definition in arms.items():
        if arm in READS:
            parent, available, step = READS[arm]
            rule = study.read_step(definition) - (parent or 0)
            write_record(SelectionRecord(
                version=1, study="paper", arm=arm, run=definition.run, parent_step=parent, rule_step=rule, step=step,
                substitution=step != rule, available_steps=tuple(available), checkpoint=f"ckpt/{arm}/step_{step}",
                protocol_hash=digest), layout.selection(arm))
        bad = {"claude_sonnet_5": 3} if arm == "e2b_lr10x_56" else {}  # 3 bad parses in 54 turns
        cells = tuple(PilotCell(buyer=b, episodes=9, turns=54, bad_parses=bad.get(b, 0), passed=not bad.get(b))
                      for b in study.protocol.buyers.evaluation)
        write_record(PilotRecord(version=1, study="paper", arm=arm, passed=not bad, cells=cells, protocol_hash=digest),
                     layout.pilot(arm))
    return root


def _covered(report) -> dict[tuple[str, str], tuple[int, ...]]:
    return {(f.check, re.search(r"/(\w+)(?:/selection)?\.json:", f.evidence).group(1)): f.deviations
            for f in report.findings if f.status == "covered" and f.check != "arms"}


def test_every_departure_the_paper_reports_is_covered_by_its_log(paper_results):
    report = run_audit("paper", root=paper_results)
    assert report.passed, [f.evidence for f in report.findings if f.status == "fail"]
    assert _covered(report) == {
        ("read_points", "e4b_shared_56"): (3,), ("read_points", "31b_shared_56"): (3,),
        ("read_points", "e4b_shared_104"): (8,), ("read_points", "31b_shared_104"): (8,),
        ("read_points", "e2b_lr3x_56"): (4,), ("read_points", "e2b_lr10x_56"): (4,),
        ("read_points", "12b_lr3x_56"): (5,), ("pilot_gate", "e2b_lr10x_56"): (7,),
    }


def test_superseding_an_entry_withdraws_its_coverage(paper_results, edit):
    folder = paper_results / "registry/paper/deviations"
    old = yaml.safe_load((folder / "0004-2-3b-3x-and-10x-lr-arms-read-at-step-56.yaml").read_text())
    amended = {**old, "id": 17, "arms": ["e2b_lr3x_56"], "supersedes": 4, "title": "2.3B 3x arm read at step 56"}
    (folder / "0017-2-3b-3x-arm-read-at-step-56.yaml").write_text(yaml.safe_dump(amended, sort_keys=False))
    append_to_index(folder, 17, folder / "0017-2-3b-3x-arm-read-at-step-56.yaml")  # as `nego deviation new` does
    edit(paper_results / "registry/paper/arms.yaml", "deviations: [6, 4]\n", "deviations: [6, 17]\n")
    report = run_audit("paper", root=paper_results)
    problems = [f.evidence for f in report.findings if f.status == "fail"]
    assert problems == [
        "registry/paper/arms.yaml:added_arms.e2b_lr10x_56.deviations: entry 4 is superseded",
        "outputs/paper/select/e2b_lr10x_56/selection.json:step: 56 substitutes for missing step 64; no active deviation "
        "(checkpoint_substitution or read_point) covers it",
    ]
    assert [f.deviations for f in report.findings if "e2b_lr3x_56/selection.json" in f.evidence] == [(17,)]


def test_the_paper_results_fail_without_the_gate_override(paper_results):
    shutil.move(paper_results / "registry/paper/deviations/0007-10x-lr-sonnet-5-cell-ran-despite-failing-the-pilot-gate.yaml",
                paper_results / "gate.yaml.bak")
    report = run_audit("paper", root=paper_results)
    failed = {f.check for f in report.findings if f.status == "fail"}
    assert {"pilot_gate", "deviation_ids"} <= failed
