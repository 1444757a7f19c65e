"""Contract test of the select stage's DCP -> HF export on a real torch DCP checkpoint.

The checkpoint is written by ``torch.distributed.checkpoint`` in NeMo-RL's DTensor v2 layout
(``step_N/policy/weights/model/.metadata`` + ``__0_0.distcp``, optimizer state under
``policy/weights/optimizer/optim/``), so ``checkpoint_format`` reads real DCP metadata, not a stub
file. NeMo-RL itself is not installed here: its ``convert_dcp_to_hf`` is replaced by a stand-in that
reads the path it is handed with torch's own ``dcp_to_torch_save`` and writes the tensors as an HF
folder, which checks the contract (the converter gets a DCP checkpoint holding the model's weights
and the saved model name) but not NeMo-RL's key mapping, Gemma 4's config or vLLM loading the result
(docs/nemo-rl.md, "What the export tests do not cover").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")


def _dcp_step(tmp_path: Path) -> tuple[Path, dict]:
    step = tmp_path / "outputs" / "paper" / "train" / "31b_shared_cont" / "checkpoints" / "step_48"
    weights = step / "policy" / "weights"
    state = {"model.embed_tokens.weight": torch.arange(12.0).reshape(3, 4), "lm_head.bias": torch.ones(3)}
    with pytest.warns(UserWarning, match="single process"):
        dcp.save(state, checkpoint_id=str(weights / "model"))
        dcp.save({"exp_avg": torch.zeros(3)}, checkpoint_id=str(weights / "optimizer" / "optim"))
    (step / "policy" / "tokenizer").mkdir(parents=True)
    (step / "config.yaml").write_text(yaml.safe_dump({"policy": {"model_name": "google/gemma-4-31b-it"}}))
    return step, state


def _stand_in(calls: list):
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    def convert(*, dcp_ckpt_path, hf_ckpt_path, model_name_or_path, tokenizer_name_or_path, overwrite, hf_overrides):
        calls.append(model_name_or_path)
        source = Path(dcp_ckpt_path) / "model"  # NeMo-RL's converter detects the v2 model/ subfolder
        out = Path(hf_ckpt_path)
        out.mkdir(parents=True, exist_ok=overwrite)
        dcp_to_torch_save(str(source), str(out / "pytorch_model.bin"))
        (out / "config.json").write_text(json.dumps({"_name_or_path": model_name_or_path}))
    return convert


def test_select_exports_a_real_dcp_checkpoint_and_points_the_seller_at_the_hf_folder(tmp_path, monkeypatch):
    from negotiation.pipeline._train import folder_sha256, served_checkpoint
    from negotiation.training.nemo import _export, checkpoint_format

    step, state = _dcp_step(tmp_path)
    assert checkpoint_format(step) == ("dcp", step / "policy" / "weights")
    calls: list = []
    monkeypatch.setattr(_export, "_dcp_converter", lambda: _stand_in(calls))
    select_dir = tmp_path / "outputs" / "paper" / "select" / "31b_shared_104"
    served = served_checkpoint(tmp_path, str(step.relative_to(tmp_path)), select_dir)
    assert served == "outputs/paper/select/31b_shared_104/hf" and calls == ["google/gemma-4-31b-it"]
    loaded = torch.load(tmp_path / served / "pytorch_model.bin")
    assert set(loaded) == set(state) and all(torch.equal(loaded[k], state[k]) for k in state)
    # The weights hash of the trained checkpoint ignores its optimizer state.
    before = folder_sha256(step / "policy" / "weights")
    for shard in (step / "policy" / "weights" / "optimizer").rglob("*.distcp"):
        shard.write_bytes(b"changed optimizer state")
    assert folder_sha256(step / "policy" / "weights") == before
