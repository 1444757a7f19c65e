"""Deviation entries: schema, coverage, supersession, file naming and the paper's log."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from negotiation.registry import Deviation, load_deviation_log, load_registry
from negotiation.study import FILE_NAME, deviation_filename, slugify

BASE = {"version": 1, "id": 1, "date": "2026-11-30", "title": "Something changed", "category": "read_point",
        "arms": ["w16_lr3x"], "what_changed": "read 48", "why": "lost 56", "expected_impact": "small"}


def _entry(**changes) -> Deviation:
    return Deviation.model_validate({**BASE, **changes})


def test_an_entry_must_say_what_it_covers():
    with pytest.raises(ValidationError, match="name the arms or cells covered"):
        _entry(arms=[])
    with pytest.raises(ValidationError, match="all_arms entries list no arms"):
        _entry(all_arms=True)
    with pytest.raises(ValidationError, match="cannot supersede itself"):
        _entry(supersedes=1)
    with pytest.raises(ValidationError, match="category"):
        _entry(category="oops")


def test_coverage_of_arms_cells_and_all_arms():
    cell = _entry(arms=[], cells=[{"arm": "w16_lr10x", "buyer": "titfortat"}])
    assert cell.covers("w16_lr10x", buyer="titfortat") and not cell.covers("w16_lr10x", buyer="boulware_e05")
    assert not cell.covers("w16_lr10x") and cell.named_arms() == {"w16_lr10x"}
    assert _entry().covers("w16_lr3x", buyer="anyone") and not _entry().covers("w16_lr10x")
    assert _entry(arms=[], all_arms=True).covers("anything")


def test_slug_and_file_name():
    assert deviation_filename(3, "Checkpoint substitutions at 4.5B and 31B!") == "0003-checkpoint-substitutions-at-4-5b-and-31b.yaml"
    assert slugify("???") == "entry"


@given(st.integers(1, 9999), st.text(max_size=120))
def test_every_generated_file_name_is_a_valid_entry_name(entry_id, title):
    name = deviation_filename(entry_id, title)
    match = FILE_NAME.match(name)
    assert match and int(match.group(1)) == entry_id and len(match.group(2)) <= 60


def test_log_loading_reports_schema_and_naming_problems(tmp_path):
    (tmp_path / "0001-ok.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "0002-bad.yaml").write_text(yaml.safe_dump({**BASE, "id": 2, "category": "oops"}))
    (tmp_path / "0003-wrong-number.yaml").write_text(yaml.safe_dump({**BASE, "id": 4}))
    (tmp_path / "0001-zz-dup.yaml").write_text(yaml.safe_dump({**BASE, "id": 1}))
    (tmp_path / "notes.txt").write_text("stray")
    log, problems = load_deviation_log(tmp_path, root=tmp_path)
    assert sorted(log.entries) == [1]
    assert problems[0].startswith("0002-bad.yaml:category: Input should be")
    assert problems[1] == "notes.txt:<file>: not a deviation entry (entries are NNNN-slug.yaml)"
    assert log.naming_problems == [
        "0001-zz-dup.yaml:id: 1 is also the id of 0001-ok.yaml",
        "0003-wrong-number.yaml:id: 4 differs from the file name's number 3",
    ]


def test_superseded_entries_stop_covering(tmp_path):
    (tmp_path / "0001-a.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "0002-b.yaml").write_text(yaml.safe_dump({**BASE, "id": 2, "arms": ["w16_lr10x"], "supersedes": 1}))
    log, problems = load_deviation_log(tmp_path)
    assert problems == [] and [e.id for e in log.active()] == [2]
    assert log.covering("w16_lr3x", ["read_point"]) == [] and log.covering("w16_lr10x", ["read_point"]) == [2]
    assert log.covering("w16_lr10x", ["gate_override"]) == [] and log.next_id() == 3


def test_paper_log_encodes_appendix_k_and_the_added_arms():
    registry = load_registry("paper")
    # 1-16: Appendix K and the added arms; 17 amends 9 with the serving value (the protocol keeps the frozen 2);
    # 18: Appendix A's Sonnet 5 temperature refusal.
    assert registry.problems == [] and sorted(registry.deviations.entries) == list(range(1, 19))
    assert registry.deviations.entries[17].supersedes == 9
    assert registry.deviations.entries[17].values == {"sizes.31b.eval_accelerators": 4}
    assert all(re.match(r"^\d{4}-", p.name) for p in registry.deviations.paths.values())
    gate = [e for e in registry.deviations.entries.values() if e.category == "gate_override"]
    assert len(gate) == 1 and gate[0].covers("e2b_lr10x_56", buyer="claude_sonnet_5")
    assert not gate[0].covers("e2b_lr10x_56", buyer="gpt_5_6_terra")
    for name, arm in registry.added.items():
        categories = {registry.deviations.entries[i].category for i in arm.deviations}
        assert "arm_added" in categories, name
