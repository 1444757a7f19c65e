"""The evaluation harness: cell runner, results store, pilot gate, accounting, stand-in server.

Names resolve lazily (on first access, from the module that defines them), so a command that
needs one piece pays only for it: ``nego play`` runs an episode through the harness' agent pool
without importing pandas (accounting), the pilot gate or the stand-in server.
"""

from __future__ import annotations

from typing import Any

from negotiation._lazy import homes, lazy_attribute

_EXPORTS = {
    "_accounting": ("arm_accounting", "write_accounting"),
    "_backend": ("BACKENDS", "ExecutionBackend", "parse_backend"),
    "_cell": ("AgentPool", "CellProgress", "CellSpec", "play_episode", "run_cell"),
    "_fingerprint": ("StoreFingerprint", "adopt_fingerprint"),
    "_pilot": ("PilotResult", "decide", "run_pilot"),
    "_ray_local": ("local_ray_options", "start_ray", "stop_ray"),
    "_records": ("pilot_record", "write_redacted"),
    "_run": ("EvaluationResult", "RunOptions", "arm_settings", "cell_fingerprint", "evaluate_arm", "evaluate_cell"),
    "_setup": ("agent_factory", "arm_sampling_role", "build_cell", "env_config", "parse_buyers", "parse_domains",
               "parse_seeds"),
    "_standin": ("FAULT_KINDS", "PERSONAS", "Faults", "StandinConfig", "StandinServer"),
    "_standin_prompt": ("PromptReadError", "read_view"),
    "_store": ("ResultsStore", "StoreLockedError"),
    "_weights": ("folder_sha256", "is_optimizer_state", "seller_weights_sha256"),
}
_HOME = homes(_EXPORTS)
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    value = lazy_attribute(__name__, _HOME, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return __all__
