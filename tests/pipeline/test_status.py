"""``nego status`` reports the audit as ``nego audit`` judges it, from the stage's audit.json."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from negotiation.pipeline import run_audit_stage
from negotiation.pipeline._status import study_state
from negotiation.registry import run_audit
from negotiation.study import load_study

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for part in ("protocol", "registry", "pipelines"):
        shutil.copytree(REPO / part, tmp_path / part, symlinks=True)  # a study project links outputs/
    return tmp_path


def test_status_shows_not_run_before_the_audit_stage(root):
    assert study_state("demo", root)["audit"] == "not run"


@pytest.mark.parametrize("study", ["demo", "lm"])
def test_status_agrees_with_the_audit_it_reads(root, study):
    layout = load_study(study, root).layout
    passed = run_audit_stage(study, layout.dir, layout.audit)
    assert passed == run_audit(study, root=root, results_dir=layout.dir).passed
    assert study_state(study, root)["audit"] == ("passed" if passed else "FAILED")


def test_status_shows_a_failed_audit_as_failed(root):
    layout = load_study("demo", root).layout
    run_audit_stage("demo", layout.dir, layout.audit)
    text = layout.audit.read_text(encoding="utf-8").replace('"status": "pass"', '"status": "fail"', 1)
    layout.audit.write_text(text, encoding="utf-8")
    assert study_state("demo", root)["audit"] == "FAILED"
