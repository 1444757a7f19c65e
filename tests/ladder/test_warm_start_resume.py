"""A warm start cut short (a GPU call's time limit) resumes exactly from its folder's resume file."""

from __future__ import annotations

import shutil

import pytest

import negotiation.lm._sft as sft
from negotiation.errors import ConfigError
from negotiation.ladder import write_base
from negotiation.lm import SFT_RESUME_FILE
from tests.conftest import tiny_lm_protocol


def _protocol(steps: int = 6):
    protocol = tiny_lm_protocol()
    return protocol.model_copy(update={"warm_start": protocol.warm_start.model_copy(update={"steps": steps})})


def _cut_at(monkeypatch, step: int) -> None:
    """Make the loop stop with an error when it reaches ``step`` (as a killed call would)."""
    real = sft.lr_at_step

    def stopping(at, *args):
        if at == step:
            raise KeyboardInterrupt(f"cut at step {at}")
        return real(at, *args)

    monkeypatch.setattr(sft, "lr_at_step", stopping)


@pytest.fixture()
def tokenizer_dir(tiny_lm, tmp_path):
    shutil.copytree(tiny_lm.parent / "tokenizer", tmp_path / "tokenizer")
    return tmp_path / "tokenizer"


def test_a_cut_warm_start_resumes_to_the_uninterrupted_bytes(tokenizer_dir, tmp_path, monkeypatch):
    whole = write_base(_protocol(), "lm_xs", tokenizer_dir, tmp_path / "whole", log=lambda _: None)
    assert not (tmp_path / "whole" / SFT_RESUME_FILE).exists()
    with monkeypatch.context() as patch:
        _cut_at(patch, 5)
        with pytest.raises(KeyboardInterrupt):
            write_base(_protocol(), "lm_xs", tokenizer_dir, tmp_path / "cut", log=lambda _: None)
    assert (tmp_path / "cut" / SFT_RESUME_FILE).is_file() and not (tmp_path / "cut" / "warm_start.json").exists()
    said = []
    resumed = write_base(_protocol(), "lm_xs", tokenizer_dir, tmp_path / "cut", log=said.append)
    assert any("resumes at step 4" in line for line in said)
    assert resumed == whole
    assert (tmp_path / "cut/model.safetensors").read_bytes() == (tmp_path / "whole/model.safetensors").read_bytes()
    assert not (tmp_path / "cut" / SFT_RESUME_FILE).exists()


def test_a_resume_file_of_another_warm_start_is_refused_by_key(tokenizer_dir, tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        _cut_at(patch, 3)
        with pytest.raises(KeyboardInterrupt):
            write_base(_protocol(), "lm_xs", tokenizer_dir, tmp_path / "cut", log=lambda _: None)
    with pytest.raises(ConfigError, match=rf"{SFT_RESUME_FILE}:key.steps: 6 in the file, 8 now"):
        write_base(_protocol(8), "lm_xs", tokenizer_dir, tmp_path / "cut", log=lambda _: None)
