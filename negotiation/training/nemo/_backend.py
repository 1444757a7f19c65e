"""Whether NeMo-RL can run here, and one error that names everything that is missing.

NeMo-RL is installed from its own checkout (its PyPI name is an empty placeholder), brings Ray,
and needs GPUs and the model checkpoint. Every import of it goes through ``import_backend`` so
that the rest of the package imports and tests without it.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Callable

from negotiation.errors import NegotiationError

__all__ = ["BackendUnavailableError", "backend_problems", "import_backend", "require_backend"]

_INSTALL_HINT = {
    "nemo_rl": "install NeMo-RL from its checkout (git clone --recursive https://github.com/NVIDIA-NeMo/RL; "
               "uv venv; uv run ...), see docs/nemo-rl.md",
    "ray": "Ray comes with NeMo-RL's environment; run inside it (uv run ...)",
    "torch": "install torch",
    "transformers": "install the [llm] extra (pip install -e .[llm])",
}


class BackendUnavailableError(NegotiationError):
    """NeMo-RL training cannot start here; ``missing`` lists each missing piece."""

    def __init__(self, missing: list[str]):
        self.missing = list(missing)
        super().__init__("NeMo-RL backend unavailable: " + "; ".join(self.missing))


def import_backend(module: str) -> ModuleType:
    """Import ``module`` or raise ``BackendUnavailableError`` naming its package and the fix."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        hint = _INSTALL_HINT.get(top, f"install {top}")
        raise BackendUnavailableError([f"python package {top!r} cannot be imported ({exc}); {hint}"]) from exc


def _cuda_devices() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _looks_local(model: str) -> bool:
    """A filesystem path rather than a hub id such as ``google/gemma-4-E2B-it``."""
    return model.startswith(("/", "./", "../", "~")) or Path(model).expanduser().exists()


def backend_problems(*, model: str, gpus_needed: int, extra_paths: dict[str, Path] | None = None,
                     gpu_count: Callable[[], int] = _cuda_devices) -> list[str]:
    """Everything missing for a NeMo-RL run: packages, GPUs, the model checkpoint, other inputs."""
    missing = []
    for package in ("nemo_rl", "ray"):
        if importlib.util.find_spec(package) is None:
            missing.append(f"python package {package!r} is not installed; {_INSTALL_HINT[package]}")
    found = gpu_count()
    if found < gpus_needed:
        missing.append(f"GPUs: {gpus_needed} needed (cluster.gpus_per_node x cluster.num_nodes), {found} visible")
    if _looks_local(model) and not Path(model).expanduser().is_dir():
        missing.append(f"model checkpoint path {model!r} (policy.model_name) does not exist")
    for what, path in (extra_paths or {}).items():
        if not Path(path).exists():
            missing.append(f"{what} {str(path)!r} does not exist")
    return missing


def require_backend(**kwargs) -> None:
    """Raise ``BackendUnavailableError`` listing every problem ``backend_problems`` finds."""
    missing = backend_problems(**kwargs)
    if missing:
        raise BackendUnavailableError(missing)
