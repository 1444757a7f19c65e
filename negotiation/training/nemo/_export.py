"""Turn a NeMo-RL ``step_N/`` checkpoint into a Hugging Face folder that vLLM can serve.

The generated configs save DCP weights (``model_save_format: torch_save``), which NeMo-RL's
``convert_dcp_to_hf`` reads (DTensor v1 ``weights/.metadata`` or v2 ``weights/model/.metadata``).
A checkpoint saved with ``save_consolidated: true`` already holds an HF folder under
``weights/model/consolidated/``, which is copied without NeMo-RL. Sharded safetensors without
that folder cannot be converted by NeMo-RL's tool (its issue #1535), so they are refused with
the setting to change.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import yaml

from negotiation.errors import NegotiationError
from negotiation.training.nemo._backend import import_backend

__all__ = ["CheckpointLayoutError", "checkpoint_format", "export_hf"]

Converter = Callable[..., Any]


class CheckpointLayoutError(NegotiationError):
    """A ``step_N/`` folder is not a NeMo-RL checkpoint this exporter can read."""


def checkpoint_format(step_dir: Path) -> tuple[str, Path]:
    """``("consolidated" | "dcp", path)`` of the weights in ``step_dir``, or ``CheckpointLayoutError``."""
    weights = Path(step_dir) / "policy" / "weights"
    if not weights.is_dir():
        raise CheckpointLayoutError(f"{step_dir}:policy/weights: missing; not a NeMo-RL checkpoint folder")
    consolidated = weights / "model" / "consolidated"
    if (consolidated / "config.json").is_file():
        return "consolidated", consolidated
    for candidate in (weights, weights / "model"):
        if (candidate / ".metadata").is_file():
            return "dcp", weights
    if any(weights.rglob("*.safetensors")):
        raise CheckpointLayoutError(f"{step_dir}:policy/weights: sharded safetensors without model/consolidated/; "
                                    "retrain with checkpointing.save_consolidated: true or "
                                    "model_save_format: torch_save")
    raise CheckpointLayoutError(f"{step_dir}:policy/weights: neither DCP (.metadata) nor a consolidated HF folder")


def _saved_config(step_dir: Path) -> dict[str, Any]:
    path = Path(step_dir) / "config.yaml"
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CheckpointLayoutError(f"{path}:<file>: cannot read ({exc})") from exc
    model = (config or {}).get("policy", {}).get("model_name")
    if not model:
        raise CheckpointLayoutError(f"{path}:policy.model_name: missing")
    return config


def _dcp_converter() -> Converter:
    return import_backend("nemo_rl.utils.native_checkpoint").convert_dcp_to_hf


def export_hf(step_dir: Path, out_dir: Path, *, overwrite: bool = False,
              converter: Converter | None = None) -> Path:
    """Write the HF folder of checkpoint ``step_dir`` to ``out_dir``; return ``out_dir``.

    ``converter`` defaults to NeMo-RL's ``convert_dcp_to_hf`` (imported only when needed).
    """
    step_dir, out_dir = Path(step_dir), Path(out_dir)
    kind, weights = checkpoint_format(step_dir)
    # Everything that can fail is checked before an existing output is deleted.
    convert = (converter or _dcp_converter()) if kind == "dcp" else None
    policy = _saved_config(step_dir)["policy"] if kind == "dcp" else {}
    if out_dir.exists():
        if not overwrite:
            raise CheckpointLayoutError(f"{out_dir}:<folder>: exists; pass overwrite=True to replace it")
        shutil.rmtree(out_dir)
    if convert is None:
        shutil.copytree(weights, out_dir)
        return out_dir
    tokenizer = step_dir / "policy" / "tokenizer"
    saved_tokenizer = (policy.get("tokenizer") or {}).get("name") or policy["model_name"]
    overrides = policy.get("hf_config_overrides") or policy.get("hf_overrides") or {}
    convert(dcp_ckpt_path=str(weights), hf_ckpt_path=str(out_dir), model_name_or_path=policy["model_name"],
            tokenizer_name_or_path=str(tokenizer) if tokenizer.is_dir() else saved_tokenizer,
            overwrite=True, hf_overrides=overrides)
    return out_dir
