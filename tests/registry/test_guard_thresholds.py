"""Guard thresholds the paper does not give are the project's own registry entries, shown as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.registry import run_audit
from negotiation.study import GuardThresholds, load_guard_thresholds, load_study, resolve_guards


def _findings(root: Path, study: str = "paper"):
    return [f for f in run_audit(study, root=root).findings if f.check == "guard_thresholds"]


def test_the_paper_freezes_no_threshold_and_the_project_s_come_from_the_registry(root):
    protocol = load_study("paper", root).protocol
    assert protocol.guards.deal_rate.max_drop is None and protocol.guards.turns.max_increase_over_base is None
    rules = resolve_guards(protocol, load_guard_thresholds("paper", root))
    assert rules.prespecified.deal_rate.max_drop == 0.05 and rules.prespecified.turns.max_fraction_of_cap == 0.9
    assert rules.sources["deal_rate"] == "registry/paper/guards.yaml"
    assert rules.sources["hand_read"] == "protocol/paper/protocol.yaml"  # the paper states five per family
    assert rules.sources["opener_concentration"] == "registry/paper/guards.yaml"
    [finding] = _findings(root)
    assert finding.status == "pass" and "4 this project's (registry/paper/guards.yaml)" in finding.evidence


def test_the_demo_s_frozen_thresholds_stay_in_its_protocol(root):
    rules = resolve_guards(load_study("demo", root).protocol, load_guard_thresholds("demo", root))
    assert rules.sources["deal_rate"] == "protocol/demo/protocol.yaml" and rules.prespecified.parse_rate.max_increase == 0.005
    assert _findings(root, "demo")[0].status == "pass"


def test_a_threshold_given_nowhere_fails_the_audit_and_the_analysis(root):
    (root / "registry/paper/guards.yaml").unlink()
    evidence = [f.evidence for f in _findings(root) if f.status == "fail"]
    assert "paper:protocol.yaml:guards.deal_rate.max_drop: no threshold" in evidence[0] and len(evidence) == 4
    with pytest.raises(ConfigError, match="guards.turns.max_fraction_of_cap"):
        resolve_guards(load_study("paper", root).protocol, None)


def test_a_registry_threshold_cannot_override_a_frozen_one(root):
    clash = GuardThresholds(version=1, study="demo", source="project", reason="r",
                            prespecified={"parse_rate": {"max_increase": 0.5}})
    with pytest.raises(ConfigError, match="prespecified.parse_rate.max_increase: the frozen protocol sets"):
        resolve_guards(load_study("demo", root).protocol, clash)


def test_post_hoc_thresholds_must_cite_the_entry_that_added_the_post_hoc_guards(root):
    path = root / "registry/paper/guards.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("deviations: [16]", "deviations: [3]"), encoding="utf-8")
    [finding] = _findings(root)
    assert finding.status == "fail" and "cite an active analysis_added deviation (cited: [3])" in finding.evidence


def test_the_entry_says_it_is_the_project_s(root):
    path = root / "registry/paper/guards.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("source: project", "source: paper"), encoding="utf-8")
    with pytest.raises(ConfigError, match="source"):
        load_guard_thresholds("paper", root)
