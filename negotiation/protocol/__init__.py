"""Typed protocol schema and strict YAML/JSON reading.

A study is ``protocol/<study>/protocol.yaml`` (everything fixed before any arm runs),
``arms.yaml`` (the frozen arm matrix keyed by arm name) and ``lock.yaml`` (their hashes and
those of the domain schemas they name). This package types those files; ``negotiation.study``
loads and cross-checks them and owns the lock. See ``docs/protocol.md``.

Names resolve lazily, so a command that reads one section (``load_environment``) does not
build every model of the schema.
"""

from __future__ import annotations

from typing import Any

from negotiation._lazy import homes, lazy_attribute

_EXPORTS = {
    "_env": ("env_config", "environment_config", "load_environment"),
    "_files": ("StrictModel", "display_path", "load_json_model", "load_yaml", "load_yaml_model", "parse_yaml",
               "yaml_reason"),
    "_schema": ("PROFILES", "Protocol", "check_profile"),
    "_schema_arms": ("Arm", "ArmMatrix", "ArmName", "fill_seller"),
    "_schema_env": ("Environment", "NoDealPenalty", "SamplingSettings", "SeedBlock"),
    "_schema_eval": ("DealRateGuard", "Guards", "ParseRateGuard", "PilotGate", "TurnsGuard"),
    "_schema_learning": ("LEARNING_FILE", "LearningBudget", "LearningCriterion", "LearningLadder", "LearningTask",
                         "LearningWarmStart", "VALIDATION_METRIC", "load_learning"),
    "_schema_recipe": ("PolicyWarmStart", "PolicyWidth", "Recipe"),
}
_HOME = homes(_EXPORTS)
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


def __dir__() -> list[str]:
    return __all__
