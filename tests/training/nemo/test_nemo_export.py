"""Reading NeMo-RL ``step_N/`` layouts and exporting them as Hugging Face folders."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from negotiation.training.nemo import BackendUnavailableError, CheckpointLayoutError, checkpoint_format, export_hf


def make_step(tmp_path: Path, *weight_files: str, tokenizer: bool = True) -> Path:
    step = tmp_path / "checkpoints" / "step_64"
    weights = step / "policy" / "weights"
    weights.mkdir(parents=True)
    for name in weight_files:
        (weights / name).parent.mkdir(parents=True, exist_ok=True)
        (weights / name).write_text("x")
    if tokenizer:
        (step / "policy" / "tokenizer").mkdir()
    config = {"policy": {"model_name": "google/gemma-4-E2B-it", "tokenizer": {"name": "google/gemma-4-E2B-it"},
                         "hf_config_overrides": {}}}
    (step / "config.yaml").write_text(yaml.safe_dump(config))
    return step


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        Path(kwargs["hf_ckpt_path"]).mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("metadata", [".metadata", "model/.metadata"])
def test_dcp_checkpoints_go_through_the_converter(tmp_path, metadata):
    step = make_step(tmp_path, metadata, "model/__0_0.distcp")
    assert checkpoint_format(step) == ("dcp", step / "policy" / "weights")
    convert = Recorder()
    out = export_hf(step, tmp_path / "hf", converter=convert)
    assert out == tmp_path / "hf"
    assert convert.calls == [{
        "dcp_ckpt_path": str(step / "policy" / "weights"), "hf_ckpt_path": str(tmp_path / "hf"),
        "model_name_or_path": "google/gemma-4-E2B-it", "tokenizer_name_or_path": str(step / "policy" / "tokenizer"),
        "overwrite": True, "hf_overrides": {},
    }]


def test_the_saved_tokenizer_name_is_used_when_the_checkpoint_has_none(tmp_path):
    step = make_step(tmp_path, ".metadata", tokenizer=False)
    convert = Recorder()
    export_hf(step, tmp_path / "hf", converter=convert)
    assert convert.calls[0]["tokenizer_name_or_path"] == "google/gemma-4-E2B-it"


def test_a_consolidated_folder_is_copied_without_nemo_rl(tmp_path):
    step = make_step(tmp_path, "model/consolidated/config.json", "model/consolidated/model-00001-of-00001.safetensors")
    assert checkpoint_format(step)[0] == "consolidated"
    out = export_hf(step, tmp_path / "hf")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model-00001-of-00001.safetensors"]


def test_unreadable_layouts_name_the_fix(tmp_path):
    sharded = make_step(tmp_path / "a", "model/shard-00001-model-00001-of-00001.safetensors")
    with pytest.raises(CheckpointLayoutError, match="save_consolidated: true or model_save_format: torch_save"):
        checkpoint_format(sharded)
    with pytest.raises(CheckpointLayoutError, match="policy/weights: missing"):
        checkpoint_format(tmp_path / "nothing")
    empty = make_step(tmp_path / "b")
    with pytest.raises(CheckpointLayoutError, match="neither DCP"):
        checkpoint_format(empty)


def test_an_existing_output_needs_overwrite(tmp_path):
    step = make_step(tmp_path, ".metadata")
    (tmp_path / "hf").mkdir()
    with pytest.raises(CheckpointLayoutError, match="hf:<folder>: exists"):
        export_hf(step, tmp_path / "hf", converter=Recorder())
    export_hf(step, tmp_path / "hf", converter=Recorder(), overwrite=True)


def test_a_config_without_the_model_name_is_refused(tmp_path):
    step = make_step(tmp_path, ".metadata")
    (step / "config.yaml").write_text("policy: {}\n")
    with pytest.raises(CheckpointLayoutError, match="config.yaml:policy.model_name: missing"):
        export_hf(step, tmp_path / "hf", converter=Recorder())


@pytest.mark.skipif(importlib.util.find_spec("nemo_rl") is not None, reason="NeMo-RL is installed")
def test_dcp_conversion_without_nemo_rl_names_it(tmp_path):
    step = make_step(tmp_path, ".metadata")
    with pytest.raises(BackendUnavailableError, match="'nemo_rl' cannot be imported"):
        export_hf(step, tmp_path / "hf")
