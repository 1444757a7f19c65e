"""The evaluation harness: cell runner, results store, pilot gate, accounting, stand-in server."""

from negotiation.evaluation._accounting import arm_accounting, write_accounting
from negotiation.evaluation._backend import BACKENDS, ExecutionBackend, parse_backend
from negotiation.evaluation._cell import AgentPool, CellProgress, CellSpec, play_episode, run_cell
from negotiation.evaluation._fingerprint import StoreFingerprint, adopt_fingerprint
from negotiation.evaluation._pilot import PilotResult, decide, run_pilot
from negotiation.evaluation._records import pilot_record, write_redacted
from negotiation.evaluation._run import EvaluationResult, RunOptions, cell_fingerprint, evaluate_arm, evaluate_cell
from negotiation.evaluation._setup import (agent_factory, arm_sampling_role, build_cell, env_config, parse_buyers,
                                          parse_seeds)
from negotiation.evaluation._standin import FAULT_KINDS, PERSONAS, Faults, StandinConfig, StandinServer
from negotiation.evaluation._standin_prompt import PromptReadError, read_view
from negotiation.evaluation._store import ResultsStore, StoreLockedError

__all__ = [
    "BACKENDS", "ExecutionBackend", "parse_backend", "FAULT_KINDS", "PERSONAS", "AgentPool", "CellProgress",
    "CellSpec", "EvaluationResult", "Faults",
    "PilotResult", "PromptReadError", "ResultsStore", "RunOptions", "StandinConfig", "StandinServer",
    "StoreFingerprint", "StoreLockedError", "adopt_fingerprint", "agent_factory", "arm_accounting", "arm_sampling_role",
    "build_cell", "cell_fingerprint", "decide", "env_config",
    "evaluate_arm", "evaluate_cell", "parse_buyers", "parse_seeds", "pilot_record", "play_episode", "read_view", "run_cell",
    "run_pilot", "write_accounting", "write_redacted",
]
