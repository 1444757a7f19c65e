"""The loaded study: every arm merged once, one clash rule, and the paths of its results."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.study import ResultsLayout, load_study, results_dir

ADDED = """version: 1
study: demo
added_arms:
  {name}:
    kind: trained
    description: an intermediate checkpoint of the shared run
    size: w16
    lr_multiple: 1
    run: w16_shared_init
    read_point: early
    seller: "policy:{{checkpoint}}"
    deviations: [1]
"""


def test_added_arms_join_the_frozen_matrix_once(root):
    (root / "registry/demo/arms.yaml").write_text(ADDED.format(name="w16_shared_early"))
    study = load_study("demo", root)
    assert list(study.arms) == [*study.frozen_arms, "w16_shared_early"]
    assert not study.is_frozen("w16_shared_early") and study.is_frozen("w16_base")


def test_an_added_arm_reusing_a_frozen_name_is_an_error_naming_both_files(root):
    (root / "registry/demo/arms.yaml").write_text(ADDED.format(name="w16_base"))
    with pytest.raises(ConfigError) as info:
        load_study("demo", root)
    assert str(info.value).startswith("registry/demo/arms.yaml:added_arms.w16_base: an arm of that name is already "
                                      "in the frozen matrix protocol/demo/arms.yaml")


def test_every_results_path_lies_under_the_study_results_directory(root):
    study = load_study("demo", root)
    assert study.layout.dir == results_dir("demo", root) == root / "outputs" / "demo"
    assert study.out == "outputs/demo"
    layout = ResultsLayout(Path("outputs/demo"))
    assert layout.episodes("a").as_posix() == "outputs/demo/evaluate/a/episodes.parquet"
    assert layout.turns("a").parent == layout.metrics("a").parent == layout.sampling("a").parent == layout.evaluate("a")
    assert layout.pilot("a").as_posix() == "outputs/demo/pilot/a.json"
    assert layout.pilot_store("a").as_posix() == "outputs/demo/pilot/a"
    assert layout.selection("a").parent == layout.seller("a").parent == layout.select("a")
    assert layout.contrasts.as_posix() == "outputs/demo/analyze/contrasts.json"
    assert layout.validation_report.as_posix() == "outputs/demo/validate/report.json"
