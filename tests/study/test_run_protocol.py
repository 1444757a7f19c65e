"""A training run trains under its arms' deviation values (``Study.run_protocol``), which they must
agree on, and no value may reshape the run the plan and read points were derived for."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from negotiation.errors import ConfigError
from negotiation.registry._deviation_index import append_to_index
from negotiation.study import load_study
from negotiation.training import train_config_for
from negotiation.training.lm import lm_train_config_for


def _log(root: Path, study: str, arms: list[str], values: dict) -> None:
    """Append a recipe-change deviation covering ``arms`` with ``values``, as `nego deviation new` does."""
    folder = root / "registry" / study / "deviations"
    index = yaml.safe_load((folder / "index.yaml").read_text(encoding="utf-8")) if (folder / "index.yaml").exists() else None
    entries = (index or {}).get("entries", index) or []
    next_id = max([e["id"] for e in entries], default=0) + 1
    path = folder / f"{next_id:04d}-values-for-a-test.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "id": next_id, "date": dt.date.today().isoformat(), "title": "values for a test",
        "category": "recipe_change", "arms": arms, "what_changed": "the covered arms trained otherwise",
        "why": "a test", "expected_impact": "none", "values": values}, sort_keys=False), encoding="utf-8")
    append_to_index(folder, next_id, path)


def test_an_lm_arms_estimator_value_reaches_the_token_trainer_and_no_other_run(committed_root, tmp_path):
    _log(committed_root, "lm", ["lm_m_lr3x"], {"gpu_training.baseline": "group_mean"})
    study = load_study("lm", committed_root)
    changed = lm_train_config_for(study, "lm_m_lr3x", study.arms["lm_m_lr3x"], base=tmp_path)
    kept = lm_train_config_for(study, "lm_m_shared", study.arms["lm_m_shared"], base=tmp_path)
    assert changed.protocol.gpu_training.baseline == "group_mean"
    assert kept.protocol.gpu_training.baseline == study.protocol.gpu_training.baseline == "leave_one_out"
    assert kept.protocol is study.protocol  # no value covers it: the frozen protocol itself


def test_a_demo_arms_rate_value_reaches_the_demo_trainer(root):
    run = "w16_lr3x"
    frozen = load_study("demo", root).protocol.training.learning_rate
    _log(root, "demo", [run], {"training.learning_rate": frozen / 2})
    study = load_study("demo", root)
    assert train_config_for(study, run).recipe.learning_rate == frozen / 2
    assert train_config_for(study, "w16_lr10x").recipe.learning_rate == frozen


def test_a_runs_owners_are_its_own_arms_else_those_continuing_it(root):
    study = load_study("lm", root)
    assert study.run_owners("lm_m_shared_cont") == ["lm_m_shared_104"] and study.run_owners("nope") == []
    demo = load_study("demo", root)
    arm = next(a for a in demo.arms.values() if a.kind == "trained" and a.parent_run)
    only_continued = replace(demo, frozen_arms={n: a for n, a in demo.frozen_arms.items() if a.run != arm.parent_run})
    assert only_continued.run_owners(arm.parent_run) == [next(n for n, a in demo.arms.items() if a is arm)]
    config = train_config_for(only_continued, arm.parent_run)  # trained as its own run, from the base
    assert (config.arm.arm, config.arm.parent, config.arm.parent_arm) == (arm.parent_run, None, None)


def test_arms_sharing_a_run_must_agree_on_its_values(committed_root):
    study = load_study("paper", committed_root)
    owners = sorted(n for n, a in study.arms.items() if a.kind == "trained" and a.run == "e4b_lr3x")
    assert len(owners) == 2  # one run, read at two points
    _log(committed_root, "paper", owners[:1], {"training.learning_rate": 2 * study.protocol.training.learning_rate})
    with pytest.raises(ConfigError, match=r"run 'e4b_lr3x' trains once for arms .* a value that changes training "
                                          r"must cover every arm of the run"):
        load_study("paper", committed_root).run_protocol("e4b_lr3x")


def test_a_value_may_not_reshape_a_run(committed_root, tmp_path):
    _log(committed_root, "lm", ["lm_m_lr3x"], {"gpu_training.initial_steps": 32})
    study = load_study("lm", committed_root)
    with pytest.raises(ConfigError, match=r"^registry/lm/deviations: a value gives run 'lm_m_lr3x' \(arms \['lm_m_lr3x'\]\) "
                                          r"gpu_training.initial_steps 32, frozen 64"):
        lm_train_config_for(study, "lm_m_lr3x", study.arms["lm_m_lr3x"], base=tmp_path)


def test_the_audit_names_a_run_its_arms_train_differently_before_it_trains(committed_root):
    from negotiation.registry import run_audit

    study = load_study("paper", committed_root)
    _log(committed_root, "paper", ["e4b_lr3x_56"], {"training.learning_rate": 2 * study.protocol.training.learning_rate})
    failed = [f.evidence for f in run_audit("paper", root=committed_root).findings if f.status == "fail"]
    assert len(failed) == 1 and "run 'e4b_lr3x' trains once for arms ['e4b_lr3x_56', 'e4b_lr3x_64']" in failed[0]


@pytest.mark.parametrize(("study_name", "arm", "key", "value"), [
    ("lm", "lm_m_lr3x", "sizes.lm_m.num_layers", 8),
    ("demo", "w16_lr3x", "sizes.w16.init_seed", 99),
])
def test_a_value_may_not_change_a_size_its_init_builds_once_for_some_arms(committed_root, tmp_path, study_name, arm,
                                                                          key, value):
    _log(committed_root, study_name, [arm], {key: value})
    study = load_study(study_name, committed_root)
    size, field = key.split(".")[1:]
    message = rf"^registry/{study_name}/deviations: a value gives arm '{arm}' {key} {value}, frozen .*init@{size}"
    assert study.size_value_problem(arm) and study.size_value_problem(f"{size}_base") is None  # not covered
    with pytest.raises(ConfigError, match=message):
        study.run_protocol(study.arms[arm].run)
    from negotiation.registry import run_audit

    failed = [f.evidence for f in run_audit(study_name, root=committed_root).findings if f.status == "fail"]
    assert len(failed) == 1 and f"arm '{arm}' {key}" in failed[0], failed


def test_an_llm_sizes_serving_value_for_some_arms_stands(committed_root):
    study = load_study("paper", committed_root)
    assert all(study.size_value_problem(arm) is None for arm in study.arms)  # entry 17: 31B arms served on four
