"""The read-point rule on the paper's cases, as a property, and over real step_N/ folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from negotiation.errors import ConfigError
from negotiation.study import load_study
from negotiation.registry import (
    CheckpointError,
    list_checkpoint_steps,
    load_registry,
    select_checkpoint,
    select_read_point,
)

EVERY_8 = range(8, 65, 8)  # validation and checkpoints every 8 steps


def test_step_56_is_read_when_64_was_lost():
    point = select_read_point(64, [s for s in EVERY_8 if s != 64])
    assert (point.rule_step, point.step, point.substitution, point.combined_step) == (64, 56, True, 56)


def test_31b_continuation_branched_at_56_is_read_at_its_step_48():
    point = select_read_point(104, range(8, 49, 8), offset=56)
    assert (point.rule_step, point.step, point.substitution, point.combined_step) == (48, 48, False, 104)


def test_continuation_branched_at_64_is_read_at_its_step_40():
    point = select_read_point(104, range(8, 41, 8), offset=64)
    assert (point.rule_step, point.step, point.substitution, point.combined_step) == (40, 40, False, 104)


def test_104_combined_steps_is_64_plus_40_or_56_plus_48():
    assert {p.offset + p.step for p in (select_read_point(104, [40], offset=64), select_read_point(104, [48], offset=56))} == {104}


def test_a_rule_step_between_checkpoints_falls_back_to_the_previous_one():
    point = select_read_point(60, EVERY_8)
    assert (point.step, point.substitution) == (56, True)


def test_no_checkpoint_at_or_before_the_rule_step_is_an_error():
    with pytest.raises(CheckpointError, match="no checkpoint at or before step 40"):
        select_read_point(104, [48, 56], offset=64)
    with pytest.raises(CheckpointError, match="lies before the branch step 64"):
        select_read_point(56, EVERY_8, offset=64)


@given(st.sets(st.integers(0, 200), min_size=1), st.integers(0, 200), st.integers(0, 100))
def test_rule_reads_the_nearest_saved_step_at_or_before_the_rule(available, combined, offset):
    rule = combined - offset
    if rule < 0 or not any(s <= rule for s in available):
        with pytest.raises(CheckpointError):
            select_read_point(combined, available, offset=offset)
        return
    point = select_read_point(combined, available, offset=offset)
    assert point.step in available and point.step <= point.rule_step == rule
    assert not any(point.step < s <= rule for s in available)
    assert point.substitution == (rule not in available)


def _checkpoint(run: Path, step: int, recorded: int | None = None) -> None:
    folder = run / f"step_{step}"
    folder.mkdir(parents=True)
    (folder / "training_info.json").write_text(json.dumps({"step": step if recorded is None else recorded}))


def test_listing_counts_only_complete_step_folders(tmp_path):
    for step in (16, 8, 48):
        _checkpoint(tmp_path, step)
    (tmp_path / "step_56").mkdir()  # interrupted upload: no training_info.json
    (tmp_path / "stepx").mkdir()
    assert list_checkpoint_steps(tmp_path) == [8, 16, 48]


def test_listing_rejects_a_folder_whose_info_names_another_step(tmp_path):
    _checkpoint(tmp_path, 8, recorded=16)
    with pytest.raises(CheckpointError, match=r"training_info.json:step: 16 differs from the folder name 'step_8'"):
        list_checkpoint_steps(tmp_path)
    with pytest.raises(CheckpointError, match="no such run directory"):
        list_checkpoint_steps(tmp_path / "absent")


def test_select_checkpoint_for_the_paper_31b_continuation_whose_parent_lost_step_64(tmp_path):
    paper = load_study("paper")
    parent, run = tmp_path / "31b_shared_init", tmp_path / "31b_shared_cont"
    for step in range(8, 57, 8):  # 64 lost
        _checkpoint(parent, step)
    for step in range(8, 49, 8):
        _checkpoint(run, step)
    record = select_checkpoint(paper, "31b_shared_104", run, parent_run_dir=parent)
    assert (record.parent_step, record.rule_step, record.step, record.substitution) == (56, 48, 48, False)
    assert record.combined_step == 104 and record.checkpoint == str(run / "step_48")
    assert select_checkpoint(paper, "31b_shared_104", run, parent_step=64).step == 40


def test_select_checkpoint_for_an_added_arm_reads_its_own_rule(tmp_path):
    paper, added = load_study("paper"), load_registry("paper").added
    for step in range(8, 57, 8):  # the 2.3B 3x run lost step 64
        _checkpoint(tmp_path, step)
    record = select_checkpoint(paper, "e2b_lr3x_56", tmp_path, arm=added["e2b_lr3x_56"])
    assert (record.parent_step, record.rule_step, record.step, record.substitution) == (None, 56, 56, False)
    with pytest.raises(ConfigError, match="arms.e2b_base: not a trained arm"):
        select_checkpoint(paper, "e2b_base", tmp_path)


@pytest.mark.parametrize("arm", ["e2b_lr3x_56", "e2b_lr10x_56", "12b_lr3x_56", "e4b_shared_56", "31b_shared_56",
                                 "e4b_lr3x_56", "31b_lr3x_56"])
def test_a_paper_56_arm_reads_56_even_when_64_was_saved(tmp_path, arm):
    paper, added = load_study("paper"), load_registry("paper").added
    for step in EVERY_8:  # a reproduction without the upload fault saves step 64
        _checkpoint(tmp_path, step)
    record = select_checkpoint(paper, arm, tmp_path, arm=added[arm])
    assert (record.step, record.combined_step, record.substitution) == (56, 56, False)
