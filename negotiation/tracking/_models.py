"""An arm's seller logged as an MLflow model: the ``pyfunc`` folder a registered version points at.

``log_seller_model`` writes the model with ``mlflow.pyfunc.save_model`` into a temporary folder
(``_pyfunc_entry.py``, whose ``SellerModel`` loads the seller, the ``seller.json`` record, the checkpoint's files and an explicit requirement
list, so MLflow never infers requirements by importing the model) and copies it into the run's
artifacts under ``model/``. The registered version's source is then ``runs:/<run>/model`` and
``mlflow.pyfunc.load_model("models:/<name>@read")`` plays the seller.

Weights up to ``COPY_LIMIT_BYTES`` are copied (the demo's policies are kilobytes, the lm ladder's
folders megabytes); a larger checkpoint (the paper's 31B folders) is not duplicated into the
artifact store: the model then reads it from its path in the checkout, the path and weights hash
being on the version's tags.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

_ENTRY = Path(__file__).with_name("_pyfunc_entry.py")
"""The model's code (MLflow's "models from code": the file is copied into the model and run)."""
MODEL_ARTIFACTS = "model"
"""Artifact folder of an evaluation run holding the seller's MLflow model."""
COPY_LIMIT_BYTES = 2 * 1024**3
"""Checkpoints up to this size are copied into the model; larger ones are read from the checkout."""
_REQUIREMENTS = ("mlflow", "numpy", "pandas", "pydantic", "pyyaml", "torch")
_LLM_REQUIREMENTS = ("transformers", "tokenizers", "safetensors")


def checkpoint_folder(record: dict[str, Any], root: Path) -> Path | None:
    """The checkpoint folder a seller record's spec names (``None`` for a scripted seller)."""
    from negotiation.agents import agent_kind, parse_spec

    spec = parse_spec(record["seller"])
    if not agent_kind(spec.text).local_weights:
        return None
    folder = Path(spec.target) if Path(spec.target).is_absolute() else Path(root) / spec.target
    return folder if folder.is_dir() else None


def _weights(folder: Path) -> list[Path]:
    """Files of a checkpoint folder but its optimizer state (``optimizer/``, ``optim*.pt``: the
    same files the weights hash of ``select@`` leaves out)."""
    def optimizer(path: Path) -> bool:
        return any(part.lower().startswith("optim") for part in path.relative_to(folder).parts)
    return sorted(p for p in folder.rglob("*") if p.is_file() and not optimizer(p))


def _stage(folder: Path, target: Path) -> None:
    """The checkpoint's files (optimizer state left out) under ``target``, hard-linked when possible."""
    for path in _weights(folder):
        dest = target / path.relative_to(folder)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, dest)
        except OSError:
            shutil.copy2(path, dest)


def requirements(kind: str) -> list[str]:
    """Pinned requirements of a seller model (the ``negotiation`` package itself comes from the checkout)."""
    from negotiation.agents import agent_kind

    record = agent_kind(kind)  # a prompted model loaded from local weights needs transformers
    names = _REQUIREMENTS + (_LLM_REQUIREMENTS if record.reads_sampling and record.local_weights else ())
    pins = []
    for name in names:
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return pins


def log_seller_model(client: Any, run_id: str, seller_path: Path, root: Path) -> tuple[str, bool]:
    """Log the seller of ``seller_path`` as a pyfunc model under the run's ``model/``; return its
    ``runs:/`` URI and whether the weights were copied into it."""
    import mlflow.pyfunc

    from negotiation.agents import parse_spec
    from negotiation.tracking._mlflow import retrying
    from negotiation.tracking._pyfunc import CHECKPOINT_ARTIFACT, SELLER_ARTIFACT

    record = json.loads(Path(seller_path).read_text(encoding="utf-8"))
    folder = checkpoint_folder(record, root)
    with tempfile.TemporaryDirectory(prefix="seller-model-") as tmp:
        artifacts = {SELLER_ARTIFACT: str(seller_path)}
        copied = folder is not None and sum(p.stat().st_size for p in _weights(folder)) <= COPY_LIMIT_BYTES
        if copied:
            _stage(folder, Path(tmp) / "checkpoint")
            artifacts[CHECKPOINT_ARTIFACT] = str(Path(tmp) / "checkpoint")
        model_dir = Path(tmp) / MODEL_ARTIFACTS
        mlflow.pyfunc.save_model(str(model_dir), python_model=str(_ENTRY), artifacts=artifacts,
                                 pip_requirements=requirements(parse_spec(record["seller"]).kind))
        retrying(lambda: client.log_artifacts(run_id, str(model_dir), MODEL_ARTIFACTS))
    return f"runs:/{run_id}/{MODEL_ARTIFACTS}", copied


__all__ = ["COPY_LIMIT_BYTES", "MODEL_ARTIFACTS", "checkpoint_folder", "log_seller_model",
           "requirements"]
