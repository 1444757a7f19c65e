"""The demo trainer at a tiny budget: layout, reproducibility, continuation, schedule, KL base."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from negotiation.agents import make_agent
from negotiation.training import (
    CURVES_FILE,
    VALIDATION_FILE,
    checkpoint_steps,
    lr_at,
    read_training_info,
    train_arm,
)
from tests.training.tiny_setup import ENV, tiny_config

CURVE_KEYS = ["train/reward", "train/kl_penalty", "train/entropy", "train/lr", "train/grad_norm"]


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "parent"
    return train_arm(tiny_config(), ENV, run_dir, track=False), run_dir


def _weights(folder):
    return torch.load(folder / "weights.pt", weights_only=True)


def test_layout_curves_and_validation(parent_run):
    summary, run_dir = parent_run
    # Checkpoints at step 0 (the base), every 2 steps, and the last step.
    assert sorted(checkpoint_steps(run_dir)) == [0, 2, 3]
    assert sorted(summary.val_scores) == [0, 2, 3]
    curves = pd.read_csv(run_dir / CURVES_FILE)
    assert curves["step"].tolist() == [1, 2, 3] and curves["combined_step"].tolist() == [1, 2, 3]
    assert all(key in curves for key in CURVE_KEYS)
    # warmup 1 step, 3 steps: lr 3e-3, then cosine to the floor 3e-4 on the last step.
    expected = [lr_at(s, peak=3e-3, floor=3e-4, warmup_steps=1, total_steps=3) for s in range(3)]
    assert curves["train/lr"].tolist() == pytest.approx(expected)
    assert curves["train/lr"].iloc[-1] == pytest.approx(3e-4)
    assert curves["train/kl_penalty"].iloc[0] == pytest.approx(0.0, abs=1e-6)  # step 1 is the base
    val = pd.read_csv(run_dir / VALIDATION_FILE)
    assert val["step"].tolist() == [0, 2, 3]
    info = read_training_info(run_dir / "step_2")
    assert (info.step, info.combined_step, info.branch_step) == (2, 2, 0)
    assert info.consumed_scenarios == 4 and info.base_checkpoint == "../step_0"
    assert info.val_score == summary.val_scores[2] and info.parent_checkpoint is None
    make_agent(f"policy:{run_dir / 'step_3'}", "seller")  # loadable by spec


def test_same_seed_same_checkpoints_and_curves(parent_run, tmp_path):
    summary, run_dir = parent_run
    again = train_arm(tiny_config(), ENV, tmp_path / "again", track=False)
    pd.testing.assert_frame_equal(pd.read_csv(run_dir / CURVES_FILE),
                                  pd.read_csv(tmp_path / "again" / CURVES_FILE))
    assert again.val_scores == summary.val_scores
    for step in (0, 2, 3):
        a, b = _weights(run_dir / f"step_{step}"), _weights(tmp_path / "again" / f"step_{step}")
        assert all(torch.equal(a[k], b[k]) for k in a)
    moved = _weights(run_dir / "step_3")
    base = _weights(run_dir / "step_0")
    assert not all(torch.equal(moved[k], base[k]) for k in base)  # training changed the weights


def test_rollout_processes_change_no_byte_of_the_run(parent_run, tmp_path):
    _, run_dir = parent_run
    sharded = tmp_path / "sharded"
    train_arm(tiny_config(), ENV, sharded, track=False, processes=3)
    for name in (CURVES_FILE, VALIDATION_FILE):
        assert (sharded / name).read_bytes() == (run_dir / name).read_bytes()
    for step in (0, 2, 3):
        for name in ("weights.pt", "config.json"):
            assert (sharded / f"step_{step}" / name).read_bytes() == (run_dir / f"step_{step}" / name).read_bytes()


def test_continuation_restarts_schedule_and_keeps_the_base(parent_run, tmp_path):
    _, parent_dir = parent_run
    cont_dir = tmp_path / "runs" / "cont"
    cfg = tiny_config(steps=2, arm="w8_cont", parent=parent_dir / "step_3", parent_arm="w8")
    summary = train_arm(cfg, ENV, cont_dir, track=False)
    # Own steps name the folders (no step_0: the parent is the start); combined steps recorded.
    assert sorted(checkpoint_steps(cont_dir)) == [2]
    info = read_training_info(cont_dir / "step_2")
    assert (info.step, info.combined_step, info.branch_step) == (2, 5, 3)
    assert (cont_dir / "step_2" / info.base_checkpoint).resolve() == (parent_dir / "step_0").resolve()
    assert (cont_dir / "step_2" / info.parent_checkpoint).resolve() == (parent_dir / "step_3").resolve()
    assert info.consumed_scenarios == 6 + 4  # the data continues where the parent stopped
    curves = pd.read_csv(cont_dir / CURVES_FILE)
    assert curves["combined_step"].tolist() == [4, 5]
    # Fresh warmup-cosine: step 0 of the continuation is at the peak after a 1-step warmup.
    assert curves["train/lr"].tolist() == pytest.approx([3e-3, 3e-4])
    # KL to the base, not to the parent: already positive on the first continued step.
    assert curves["train/kl_penalty"].iloc[0] > 0
    assert sorted(summary.val_scores) == [0, 2]
    assert summary.val_scores[0] == pytest.approx(read_training_info(parent_dir / "step_3").val_score)


def test_training_info_is_json_with_step(parent_run):
    _, run_dir = parent_run
    raw = json.loads((run_dir / "step_2" / "training_info.json").read_text())
    assert raw["step"] == 2 and raw["arm"] == "w8" and raw["seed"] == 2


def test_a_fresh_run_starts_from_its_size_s_base_checkpoint(tmp_path):
    """``base`` (the init stage's output, e.g. a warm-started policy) is the run's step 0 and KL
    reference; a base of another width is refused naming its config."""
    from negotiation.agents import Policy, PolicyArch
    from negotiation.errors import ConfigError

    base = Policy.init(PolicyArch(width=8), seed=99)  # not the init_seed's weights
    base.save(tmp_path / "base")
    train_arm(tiny_config(steps=1, base=tmp_path / "base"), ENV, tmp_path / "run", track=False)
    step0 = _weights(tmp_path / "run" / "step_0")
    assert all(torch.equal(step0[k], v) for k, v in _weights(tmp_path / "base").items())
    Policy.init(PolicyArch(width=16), seed=0).save(tmp_path / "wide")
    with pytest.raises(ConfigError, match="wide/config.json: the base has architecture"):
        train_arm(tiny_config(steps=1, base=tmp_path / "wide"), ENV, tmp_path / "run2", track=False)
