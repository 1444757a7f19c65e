"""The derived plan and per-study pipeline files: complete, current, and checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from negotiation.pipeline import build_plan, write_plan
from negotiation.pipeline._studyfile import derive_study_pipeline
from negotiation.protocol import default_root

ROOT = default_root()


@pytest.fixture()
def root(root: Path) -> Path:
    """The shared protocol/registry copy plus the pipeline files."""
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    shutil.copyfile(ROOT / "dvc.yaml", root / "dvc.yaml")
    return root


def test_committed_plans_and_paper_pipeline_are_current():
    for study in ("demo", "paper"):
        assert all(current for _, current in write_plan(study, check=True)), study


def test_paper_plan_holds_the_frozen_ten_and_the_eleven_added_arms():
    arms = build_plan("paper")["plan"]["arms"]
    assert len(arms) == 21
    assert sum(a["frozen"] for a in arms.values()) == 10
    assert {a["kind"] for a in arms.values()} == {"base", "trained", "reference"}


def test_runs_start_from_their_size_init_or_their_parent_run():
    plan = build_plan("demo")["plan"]
    runs = plan["runs"]
    assert runs["w16_shared_init"]["start"] == "outputs/demo/init/w16"
    assert runs["w16_shared_cont"]["start"] == "outputs/demo/train/w16_shared_init"
    # parents come before their continuations, so DVC order and reading order agree
    names = list(runs)
    assert names.index("w16_shared_init") < names.index("w16_shared_cont")
    assert plan["arms"]["w16_base"]["source"] == "outputs/demo/init/w16"
    assert plan["arms"]["ref_boulware"]["source"] == "pipelines/plans/demo.yaml"
    assert plan["arms"]["w16_lr3x"]["params_key"] == "arms.w16_lr3x"  # DVC tracks this entry alone


def test_an_arm_added_in_the_registry_enters_the_plan_and_the_check_flags_the_stale_file(root):
    added = root / "registry/demo/arms.yaml"
    text = added.read_text().replace("added_arms: {}", (
        "added_arms:\n  w16_shared_40:\n    kind: trained\n    description: intermediate checkpoint\n"
        "    size: w16\n    lr_multiple: 1\n    run: w16_shared_init\n    read_step: 40\n"
        "    seller: \"policy:{checkpoint}\"\n    deviations: [1]\n"))
    added.write_text(text)
    (root / "registry/demo/deviations/0001-intermediate.yaml").write_text(yaml.safe_dump({
        "version": 1, "id": 1, "date": "2026-11-30", "title": "intermediate checkpoint", "category": "arm_added",
        "arms": ["w16_shared_40"], "what_changed": "read step 40 too", "why": "curve", "expected_impact": "none"}))
    assert build_plan("demo", root)["plan"]["arms"]["w16_shared_40"]["frozen"] is False
    assert write_plan("demo", root, check=True) == [(root / "pipelines/plans/demo.yaml", False)]
    write_plan("demo", root)
    assert write_plan("demo", root, check=True) == [(root / "pipelines/plans/demo.yaml", True)]


def test_study_pipeline_is_the_top_level_graph_rebased_at_the_root():
    derived = yaml.safe_load(derive_study_pipeline("paper", ROOT))
    top = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert derived["vars"] == ["../plans/paper.yaml", "../../params.yaml"]
    assert list(derived["stages"]) == list(top["stages"])
    assert derived["stages"]["evaluate"]["do"]["wdir"] == "../.."
    assert derived["stages"]["evaluate"]["do"]["cmd"] == top["stages"]["evaluate"]["do"]["cmd"]
