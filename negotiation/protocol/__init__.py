"""Typed protocol schema, loading ``protocol/<study>/``, and the lock (freeze / verify).

A study is ``protocol/<study>/protocol.yaml`` (everything fixed before any arm runs),
``arms.yaml`` (the frozen arm matrix keyed by arm name) and ``lock.yaml`` (their hashes and
those of the domain schemas they name). See ``docs/protocol.md``.
"""

from negotiation.protocol._cli import EXIT_FAILED, EXIT_INPUT, exit_with, protocol_app, root_option
from negotiation.protocol._env import env_config
from negotiation.protocol._files import (
    StrictModel,
    display_path,
    load_json_model,
    load_yaml,
    load_yaml_model,
    parse_yaml,
)
from negotiation.protocol._lock import Lock, LockError, checked_lock, freeze, lock_problems, protocol_hash, verify
from negotiation.protocol._schema import Protocol
from negotiation.protocol._schema_arms import Arm, ArmMatrix, ArmName, fill_seller
from negotiation.protocol._schema_env import SamplingSettings, SeedBlock
from negotiation.protocol._study import Study, arm_problems, default_root, load_study, resolve_read_step

__all__ = [
    "EXIT_FAILED", "EXIT_INPUT", "Arm", "ArmMatrix", "ArmName", "Lock", "LockError", "Protocol",
    "SamplingSettings", "SeedBlock", "StrictModel", "Study", "arm_problems", "checked_lock", "default_root",
    "display_path", "env_config", "exit_with", "root_option",
    "fill_seller", "freeze", "load_json_model", "load_study", "load_yaml", "load_yaml_model", "parse_yaml",
    "lock_problems", "protocol_app", "protocol_hash", "resolve_read_step", "verify",
]
