"""Exact resume: a token run interrupted after its step-2 checkpoint and resumed equals the
uninterrupted run (curves, validation, checkpoint bytes); partial runs are never overwritten."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from negotiation.errors import ConfigError
from negotiation.training.lm import RESUME_FILE, LmArm, LmRuntime, LmTrainConfig, train_lm_arm
from negotiation.training.lm import _trainer
from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint

STEPS = 4  # checkpoints (and resume states) at steps 0, 2, 4


class Interrupted(RuntimeError):
    """Stands for the end of a GPU call's time."""


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("base") / "tiny")


def _config(base: Path, dtype: str = "float32", **arm) -> LmTrainConfig:
    values = dict(study="tiny", arm="tiny_run", size="w16", base=base, lr_multiple=1.0, steps=STEPS, seed=3)
    return LmTrainConfig(protocol=tiny_protocol(), arm=LmArm(**{**values, **arm}),
                         runtime=LmRuntime(dtype=dtype, micro_batch_tokens=4096), protocol_hash="abc")


def _interrupt_at_update(monkeypatch, n: int) -> None:
    """The n-th optimizer update of the call raises (after the checkpoint of step n - 1)."""
    real, calls = _trainer._update, []

    def update(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise Interrupted(f"update {n}")
        return real(*args, **kwargs)

    monkeypatch.setattr(_trainer, "_update", update)


def _files(run: Path) -> dict[str, bytes]:
    names = ["curves.csv", "validation.csv"] + [f"step_{s}/{f}" for s in (0, 2, 4)
                                                 for f in ("model.safetensors", "training_info.json")]
    return {name: (run / name).read_bytes() for name in names}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_interrupted_and_resumed_run_equals_the_uninterrupted_run(base, tmp_path, monkeypatch, dtype):
    cfg = _config(base, dtype)
    train_lm_arm(cfg, tmp_path / "whole", track=False, generator_factory=canned_generator)
    assert not (tmp_path / "whole" / RESUME_FILE).exists()  # a finished run keeps no resume state
    with monkeypatch.context() as patch:
        _interrupt_at_update(patch, 4)  # updates 1-3 done; step 2 is the last checkpoint
        with pytest.raises(Interrupted):
            train_lm_arm(cfg, tmp_path / "cut", track=False, generator_factory=canned_generator)
    assert (tmp_path / "cut" / RESUME_FILE).is_file()
    assert len(pd.read_csv(tmp_path / "cut" / "curves.csv")) == 2
    summary = train_lm_arm(cfg, tmp_path / "cut", track=False, generator_factory=canned_generator, resume=True)
    assert sorted(summary.checkpoints) == [0, 2, 4] and sorted(summary.val_scores) == [0, 2, 4]
    assert not (tmp_path / "cut" / RESUME_FILE).exists()
    whole, cut = _files(tmp_path / "whole"), _files(tmp_path / "cut")
    for name in whole:
        assert whole[name] == cut[name], name
    timing = pd.read_csv(tmp_path / "cut" / "timing.csv")
    assert list(timing["step"]) == [1, 2, 3, 4]


def test_a_partial_run_is_never_overwritten_and_a_finished_one_not_resumed(base, tmp_path, monkeypatch):
    cfg = _config(base)
    with monkeypatch.context() as patch:
        _interrupt_at_update(patch, 2)
        with pytest.raises(Interrupted):
            train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator)
    with pytest.raises(ConfigError, match=f"{RESUME_FILE}: .*partial run.*resume=True"):
        train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator)
    train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator, resume=True)
    with pytest.raises(ConfigError, match="finished; nothing to resume"):
        train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator, resume=True)


def test_resume_with_another_config_names_the_file_and_key(base, tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        _interrupt_at_update(patch, 3)
        with pytest.raises(Interrupted):
            train_lm_arm(_config(base), tmp_path / "run", track=False, generator_factory=canned_generator)
    other = _config(base, lr_multiple=3.0)
    with pytest.raises(ConfigError, match=rf"{RESUME_FILE}:config\.arm\.lr_multiple: the partial run has 1\.0, this call 3\.0"):
        train_lm_arm(other, tmp_path / "run", track=False, generator_factory=canned_generator, resume=True)
