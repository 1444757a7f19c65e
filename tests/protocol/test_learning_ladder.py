"""protocol/lm/learning.yaml: the shipped ladder loads and maps to trainer configs; every bad
value is a one-line ``file:key: reason`` error; it is outside the study's lock."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.protocol import LearningCriterion, load_learning
from negotiation.study import load_study
from negotiation.training.lm import criterion_verdict, task_train_config
from tests.conftest import REPO

FILE = "protocol/lm/learning.yaml"


def test_the_shipped_ladder_loads_with_format_opening_and_negotiation():
    study = load_study("lm")
    ladder = load_learning(study.protocol, study.root)
    assert list(ladder.tasks)[:3] == ["format", "opening", "negotiation"]
    assert ladder.tasks["format"].reward == "parse" and ladder.tasks["opening"].reward == "eq1"
    assert ladder.tasks["negotiation"].cpu is None  # GPU only
    assert "learning.yaml" not in (REPO / "protocol/lm/lock.yaml").read_text()  # not frozen


def test_a_task_becomes_the_recipe_with_its_overrides_and_nothing_else(tmp_path):
    study = load_study("lm")
    protocol, task = study.protocol, load_learning(study.protocol, study.root).tasks["opening"]
    cfg = task_train_config(protocol, "opening", task, task.cpu, "lm_xs", base=tmp_path)
    t = cfg.run_protocol.training
    assert (t.learning_rate, t.rollout_turns, t.group_size) == (task.cpu.learning_rate, 1, task.cpu.group_size)
    assert t.lr_floor / t.learning_rate == pytest.approx(protocol.training.lr_floor / protocol.training.learning_rate)
    assert [b.spec for b in cfg.protocol.buyers.training] == ["scripted:fixed?target=0&readable=1"]
    assert cfg.reward == "eq1" and cfg.arm.steps == task.cpu.steps
    assert cfg.protocol.environment == protocol.environment and cfg.protocol.sizes == protocol.sizes
    assert t.normalize_rewards is False and protocol.training.normalize_rewards is True  # the cpu budget's estimator
    gpu = task_train_config(protocol, "opening", task, task.gpu, task.gpu.sizes[0], base=tmp_path)
    assert gpu.run_protocol.training.learning_rate == task.gpu.learning_rate  # the gpu_training section
    assert gpu.run_protocol.gpu_training.normalize_rewards is True  # no override: the recipe's
    assert gpu.run_protocol.gpu_training.baseline == protocol.gpu_training.baseline == "leave_one_out"
    grouped = load_learning(protocol, study.root).tasks["negotiation_groupnorm_lr3x"]
    g = task_train_config(protocol, "negotiation_groupnorm_lr3x", grouped, grouped.gpu, "lm_m", base=tmp_path)
    assert (g.run_protocol.gpu_training.baseline, g.run_protocol.gpu_training.normalize_rewards) == ("group_mean", True)


def _copy(tmp_path: Path, old: str, new: str) -> Path:
    for part in ("protocol", "registry"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    path = tmp_path / FILE
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    return tmp_path


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("reward: parse", "reward: parsed", f"{FILE}:tasks.format.reward: Input should be 'eq1' or 'parse'"),
    ("version: 1", "version: 2", f"{FILE}:version: Input should be 1"),
    ("direction: increase", "direction: up", f"{FILE}:tasks.format.criteria.0.direction:"),
    ("sizes: [lm_xs]", "sizes: [lm_xxl]", f"{FILE}:tasks.format.cpu.sizes.0: 'lm_xxl' is not an lm size"),
    ('- {spec: "scripted:fixed?target=0&readable=1", family: accept_any, weight: 1.0}',
     '- {spec: "scripted:fixed?target=0&readable=1", family: accept_any, weight: 0.5}',
     f"{FILE}:tasks.opening: Value error, training_buyers weights sum to 0.5"),
    ("family: accept_any, weight: 1.0}]}", "family: accept_any, weight: 0.75}]}",
     f"{FILE}:tasks.format.cpu.warm_start: Value error, buyers weights sum to 0.75"),
    ("reward: parse", "reward: parse\n    learning_rat: 0.1", f"{FILE}:tasks.format.learning_rat: Extra inputs"),
    ("study: lm", "study: demo", f"{FILE}:study: 'demo' is not the protocol's study 'lm'"),
])
def test_bad_values_name_file_key_and_reason(tmp_path, old, new, expected):
    root = _copy(tmp_path, old, new)
    study = load_study("lm")
    with pytest.raises(ConfigError) as info:
        load_learning(study.protocol, root)
    assert str(info.value).startswith(expected), str(info.value)


def test_overlapping_windows_are_refused(tmp_path):
    root = _copy(tmp_path, "window: 2", "window: 30")
    with pytest.raises(ConfigError, match=r"tasks.format: Value error, criterion train/reward: 2 \* window 30"):
        load_learning(load_study("lm").protocol, root)


def test_the_criterion_compares_the_first_and_last_k_means():
    rise = LearningCriterion(metric="train/reward", direction="increase", window=2, min_change=0.2)
    assert criterion_verdict(rise, [0.0, 0.2, 0.5, 0.3, 0.4, 0.5])["passed"]  # 0.1 -> 0.45
    flat = criterion_verdict(rise, [0.0, 0.2, 0.1, 0.3, 0.2, 0.2])
    assert not flat["passed"] and flat["change"] == pytest.approx(0.1)
    fall = LearningCriterion(metric="train/bad_parse_rate", direction="decrease", window=1, min_change=0.1)
    assert criterion_verdict(fall, [0.5, 0.3])["passed"] and not criterion_verdict(fall, [0.3, 0.5])["passed"]
    with pytest.raises(ValueError, match="needs 2 x 2"):
        criterion_verdict(rise, [0.0, 1.0, 2.0])


def test_a_frozen_control_criterion_reads_the_run_minus_its_control_per_step(tmp_path):
    import pandas as pd

    from negotiation.protocol import LearningTask
    from negotiation.training.lm import CURVES_FILE, VALIDATION_FILE, needs_frozen_control, task_verdict

    paired = LearningCriterion(metric="train/reward", against="frozen_control", direction="increase", window=2,
                               min_change=0.1)
    own = LearningCriterion(metric="train/reward", direction="increase", window=2, min_change=0.1)
    task = LearningTask(description="d", gpu={"sizes": ["lm_m"], "steps": 4, "learning_rate": 1e-4},
                        criteria=(paired, own))
    run, control = tmp_path / "run", tmp_path / "control"
    # the scenario mix lifts both runs alike (+0.3); the run gains nothing over its control
    for folder, rewards in ((run, [0.1, 0.1, 0.42, 0.4]), (control, [0.1, 0.1, 0.4, 0.4])):
        folder.mkdir()
        pd.DataFrame({"step": [1, 2, 3, 4], "train/reward": rewards}).to_csv(folder / CURVES_FILE, index=False)
        pd.DataFrame({"step": [0, 4], "validation/score": [0.4, 0.4]}).to_csv(folder / VALIDATION_FILE, index=False)
    verdict = task_verdict(task, run, control)
    assert needs_frozen_control(task) and [c["passed"] for c in verdict["criteria"]] == [False, True]
    assert verdict["criteria"][0]["values"] == pytest.approx([0.0, 0.0, 0.02, 0.0])
    assert verdict["paired"][1]["change"] == pytest.approx(0.01) and not verdict["passed"]
    with pytest.raises(ValueError, match="no control run"):
        task_verdict(task, run)


def test_validation_score_cannot_be_read_against_a_control():
    with pytest.raises(ValueError, match="curve metric"):
        LearningCriterion(metric="validation/score", against="frozen_control", direction="increase", window=1,
                          min_change=0.1)
