"""The audit's ``panel`` check: a buyer panel cites active ``analysis_added`` entries only."""

from __future__ import annotations

from negotiation.registry import run_audit

PANEL = "registry/demo/panel.yaml"


def _panel(root) -> list:
    return [f for f in run_audit("demo", root=root).findings if f.check == "panel"]


def test_the_demo_panel_is_covered_by_its_entry(committed_root):
    (finding,) = _panel(committed_root)
    assert (finding.status, finding.deviations) == ("covered", (1,))
    assert "agentk" in finding.evidence


def test_a_missing_or_other_entry_fails(committed_root, edit):
    edit(committed_root / PANEL, "deviations: [1]", "deviations: [1, 7]")
    assert [(f.status, f.evidence) for f in _panel(committed_root)] == [
        ("fail", "registry/demo/panel.yaml:deviations: entry 7 does not exist")]
    edit(committed_root / "registry/demo/deviations/0001-an-exploratory-anac-buyer-panel-every-seller-arm-meets.yaml",
         "category: analysis_added", "category: arm_added")
    assert any("entry 1 has category arm_added, not analysis_added" in f.evidence for f in _panel(committed_root))


def test_a_study_without_a_panel_passes():
    (finding,) = [f for f in run_audit("lm").findings if f.check == "panel"]
    assert finding.status == "pass"
