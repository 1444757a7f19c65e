"""Typed protocol schema and strict YAML/JSON reading.

A study is ``protocol/<study>/protocol.yaml`` (everything fixed before any arm runs),
``arms.yaml`` (the frozen arm matrix keyed by arm name) and ``lock.yaml`` (their hashes and
those of the domain schemas they name). This package types those files; ``negotiation.study``
loads and cross-checks them and owns the lock. See ``docs/protocol.md``.
"""

from negotiation.protocol._env import env_config, environment_config
from negotiation.protocol._files import (
    StrictModel,
    display_path,
    load_json_model,
    load_yaml,
    load_yaml_model,
    parse_yaml,
)
from negotiation.protocol._schema import Protocol
from negotiation.protocol._schema_arms import Arm, ArmMatrix, ArmName, fill_seller
from negotiation.protocol._schema_env import Environment, NoDealPenalty, SamplingSettings, SeedBlock
from negotiation.protocol._schema_recipe import Recipe

__all__ = [
    "Arm", "ArmMatrix", "ArmName", "Environment", "NoDealPenalty", "Protocol", "Recipe", "SamplingSettings",
    "SeedBlock", "StrictModel", "display_path", "env_config", "environment_config", "fill_seller", "load_json_model",
    "load_yaml", "load_yaml_model", "parse_yaml",
]
