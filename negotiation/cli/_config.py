"""Environment constants from the study protocol (never retyped in code).

The protocol's ``environment`` section is the one source of T, λ, g_fmt, g_len, t_soft, the
Dirichlet concentration and the accept-terms flag per phase; this module turns it into the
engine's ``EnvConfig``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from negotiation._root import find_root
from negotiation.names import check_name

if TYPE_CHECKING:  # the engine (asyncio, numpy) loads only for the commands that run one
    from negotiation.env import EnvConfig

__all__ = ["PHASES", "Phase", "checkpoint_study", "dirichlet_alpha_for", "env_config_for",
           "environment_of", "require_study"]

Phase = Literal["evaluation", "training"]
PHASES: tuple[Phase, Phase] = ("evaluation", "training")


def require_study(study: str, root: Path | None = None) -> Path:
    """``protocol/<study>/protocol.yaml`` of a study that exists; a bad or unknown name is a
    ``ConfigError`` (exit 2) naming the studies there are, before any command reads further."""
    root = Path(root or find_root())
    path = root / "protocol" / check_name("study", study) / "protocol.yaml"
    if not path.is_file():
        from negotiation.study import load_study

        load_study(study, root)  # raises, naming the known studies
    return path


@lru_cache(maxsize=8)
def _environment(study: str, root: Path):
    # Only the section: `nego scenario`/`score` need α, not the whole study's schema and checks.
    from negotiation.protocol import load_environment

    return load_environment(require_study(study, root), root=root)


def environment_of(study: str, root: Path | None = None):
    """The validated ``environment`` section of ``protocol/<study>/protocol.yaml``."""
    return _environment(study, Path(root or find_root()).resolve())


def env_config_for(study: str, phase: Phase, root: Path | None = None) -> EnvConfig:
    """The engine configuration of ``study`` in ``phase`` (``evaluation`` or ``training``)."""
    from negotiation.protocol import env_config
    from negotiation.study import load_study

    return env_config(load_study(study, Path(root or find_root()).resolve()).protocol, phase)


def dirichlet_alpha_for(study: str, root: Path | None = None) -> float:
    """Concentration of the Dirichlet prior over importances that ``study`` draws scenarios with."""
    return environment_of(study, root).dirichlet_alpha


def checkpoint_study(specs: tuple[str, ...], root: Path | None = None) -> str | None:
    """The study whose pipeline built the first checkpoint (``AgentKind.checkpoint_of_study``: hf,
    vllm) among ``specs``: the
    ``study`` of its ``warm_start.json`` (a ladder base), else the ``outputs/<study>/`` folder it
    lies in; ``None`` when no spec names such a checkpoint of a study under ``protocol/`` (the
    caller's default study applies)."""
    import json

    from negotiation.agents import agent_kind

    root = Path(root or find_root()).resolve()
    outputs = root / "outputs"
    for spec in specs:
        _, _, rest = spec.partition(":")
        if not agent_kind(spec).checkpoint_of_study or not rest:
            continue
        folder = Path(rest.partition("?")[0]).resolve()
        record = folder / "warm_start.json"  # negotiation.ladder.WARM_START_RECORD (not imported: torch)
        named = json.loads(record.read_text(encoding="utf-8")).get("study") if record.is_file() else None
        if named is None and folder.is_relative_to(outputs) and folder != outputs:
            named = folder.relative_to(outputs).parts[0]
        if isinstance(named, str) and (root / "protocol" / named / "protocol.yaml").is_file():
            return named
    return None
