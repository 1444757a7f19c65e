"""``step_N/`` folders: training_info round trip, discovery, and errors naming file and key."""

from __future__ import annotations

import pytest

from negotiation.agents import Policy, PolicyArch
from negotiation.errors import ConfigError
from negotiation.training import TrainingInfo, checkpoint_steps, read_training_info, write_checkpoint
from negotiation.training._checkpoint import relative_to_folder, resolve_from


def _info(step: int, **extra) -> TrainingInfo:
    values = dict(step=step, combined_step=step, branch_step=0, arm="a", seed=0, lr_multiple=1.0,
                  consumed_scenarios=16 * step, base_checkpoint="../step_0")
    return TrainingInfo(**{**values, **extra})


def test_round_trip_and_discovery(tmp_path):
    policy = Policy.init(PolicyArch(width=4), 0)
    for step in (0, 8, 16):
        write_checkpoint(tmp_path / f"step_{step}", policy, _info(step, val_score=0.5))
    (tmp_path / "step_24").mkdir()           # an interrupted save: no training_info.json
    (tmp_path / "notes").mkdir()
    assert list(checkpoint_steps(tmp_path)) == [0, 8, 16]
    info = read_training_info(tmp_path / "step_8")
    assert info == _info(8, val_score=0.5)
    assert sorted(p.name for p in (tmp_path / "step_8").iterdir()) == [
        "config.json", "training_info.json", "weights.pt"]
    assert checkpoint_steps(tmp_path / "absent") == {}


def test_relative_paths_follow_the_run_dir(tmp_path):
    folder = tmp_path / "run" / "step_8"
    folder.mkdir(parents=True)
    rel = relative_to_folder(tmp_path / "parent" / "step_0", folder)
    assert rel == "../../parent/step_0"
    assert resolve_from(folder, rel) == (tmp_path / "parent" / "step_0").resolve()


def test_read_errors_name_file_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"step_3/training_info.json:<file>: not a checkpoint folder"):
        read_training_info(tmp_path / "step_3")
    folder = tmp_path / "step_4"
    folder.mkdir()
    (folder / "training_info.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"training_info.json:line 1: invalid JSON"):
        read_training_info(folder)
    (folder / "training_info.json").write_text(_info(4).model_dump_json().replace('"step":4', '"step":-4'))
    with pytest.raises(ConfigError, match=r"training_info.json:step: Input should be greater than or equal to 0"):
        read_training_info(folder)
