"""select@ serves a NeMo-RL checkpoint through its Hugging Face export; the weights hash reads in
chunks and leaves optimizer state out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from negotiation.evaluation import _weights
from negotiation.pipeline._train import folder_sha256, served_checkpoint


def _nemo_step(root: Path, optimizer: bytes = b"adam") -> str:
    """A NeMo-RL step folder saved with save_consolidated: HF weights under policy/weights/model/consolidated."""
    step = root / "outputs/paper/train/e2b_lr3x/checkpoints/step_56"
    hf = step / "policy/weights/model/consolidated"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text(json.dumps({"model_type": "gemma"}))
    (hf / "model.safetensors").write_bytes(b"weights" * 1000)
    (step / "policy/optimizer").mkdir(parents=True)
    (step / "policy/optimizer/state.pt").write_bytes(optimizer)
    (step / "training_info.json").write_text(json.dumps({"step": 56}))
    return str(step.relative_to(root))


def test_a_nemo_checkpoint_is_served_from_its_hf_export(tmp_path):
    checkpoint = _nemo_step(tmp_path)
    select_dir = tmp_path / "outputs/paper/select/e2b_lr3x_56"
    served = served_checkpoint(tmp_path, checkpoint, select_dir)
    assert served == "outputs/paper/select/e2b_lr3x_56/hf"
    assert (tmp_path / served / "config.json").is_file() and (tmp_path / served / "model.safetensors").is_file()
    assert served_checkpoint(tmp_path, served, select_dir) == served  # an HF folder is served as it is


def test_weights_hash_excludes_optimizer_state_and_reads_in_chunks(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    _nemo_step(first, optimizer=b"adam moments at step 56")
    _nemo_step(second, optimizer=b"other moments")
    assert folder_sha256(first) == folder_sha256(second)
    weights = first / "outputs/paper/train/e2b_lr3x/checkpoints/step_56/policy/weights/model/consolidated"
    reference = hashlib.sha256()
    for path in sorted(p for p in weights.rglob("*") if p.is_file()):
        reference.update(str(path.relative_to(weights)).encode() + b"\0" + path.read_bytes())
    monkeypatch.setattr(_weights, "HASH_CHUNK", 7)  # many chunks per file give the same digest
    assert folder_sha256(weights) == reference.hexdigest()
    (weights / "model.safetensors").write_bytes(b"changed")
    assert folder_sha256(weights) != reference.hexdigest()
