"""The ``panel`` stage in the plan (the demo only, which declares a panel), its refusals, and the
report's panel tables when the stage has not run."""

from __future__ import annotations

import pytest
import yaml

from negotiation.errors import ConfigError
from negotiation.pipeline import panel_report_tables, run_panel_stage
from negotiation.study import default_root, load_study

REPO = default_root()


def _stages(path: str) -> dict:
    return yaml.safe_load((REPO / path).read_text(encoding="utf-8"))["stages"]


def test_only_the_demo_plans_a_panel_stage_and_its_report_reads_it():
    demo = _stages("dvc.yaml")
    assert demo["panel"]["outs"] == [{"outputs/demo/panel": {"persist": True}}]
    assert {"registry/demo/panel.yaml", "outputs/demo/select"} <= set(demo["panel"]["deps"])
    assert "outputs/demo/panel" in demo["report"]["deps"]
    assert not any("negotiation/analysis" in dep for dep in demo["panel"]["deps"])  # analysis edits do not replay it
    for path in ("pipelines/lm/dvc.yaml", "pipelines/paper/dvc.yaml", "pipelines/lm/gpu/dvc.yaml"):
        stages = _stages(path)
        assert "panel" not in stages
        assert not any(str(dep).endswith("/panel") for s in stages.values() for dep in s.get("deps", []))


def test_the_stage_refuses_a_study_without_a_panel_and_an_unselected_arm(tmp_path):
    with pytest.raises(ConfigError, match="registry/lm/panel.yaml:<file>: study 'lm' has no buyer panel"):
        run_panel_stage("lm", tmp_path)
    with pytest.raises(ConfigError, match="select/w16_base/seller.json:seller: no selected seller for arm 'w16_base'"):
        run_panel_stage("demo", tmp_path, arms=["w16_base"])


def test_the_report_says_when_the_panel_has_not_run(tmp_path):
    (table,) = panel_report_tables(load_study("demo"), tmp_path, seed=0)
    assert table.rows == [] and "the panel stage has not run" in table.caption and "AI assistance" in table.caption
    assert panel_report_tables(load_study("lm"), tmp_path, seed=0) == ()
