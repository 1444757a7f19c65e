"""The study as DVC stages: the plan DVC iterates over and one library function per stage.

Names resolve lazily so that each stage script imports only its own stage's dependencies
(a stage process that never trains need not import torch; one that never analyzes need not
import great-expectations): every DVC stage starts a fresh interpreter.
"""

from __future__ import annotations

from typing import Any

from negotiation._lazy import homes, lazy_attribute

_EXPORTS = {
    "_analysis": ("analysis_scope", "compliance_table", "deviation_table", "panel_report_tables", "registry_inputs", "run_analyze", "run_audit_stage",
                  "run_report", "run_validate"),
    "_evaluate": ("GateClosedError", "arm_metrics", "run_evaluate_stage", "run_pilot_stage"),
    "_keep": ("Kept", "keep_results", "kept_patterns"),
    "_lanes": ("lane_plan", "run_lanes"),
    "_panel": ("run_panel_stage",),
    "_offline": ("LEDGER", "STAGE_ORDER", "StageCommand", "arm_files", "commit_command", "commit_offline",
                 "ledger_path", "run_offline", "stage_commands"),
    "_progress": ("StageProgress",),
    "_plan": ("build_plan", "plan_path", "planned_arms", "profile_of", "profile_out", "profile_plan", "profiles",
              "render_plan", "stale_code_deps", "write_plan"),
    "_scenarios": ("run_scenarios", "scenario_table"),
    "_status": ("arm_reads", "arm_rows", "study_state"),
    "_template": ("DEVICE_STAGES",),
    "_stage": ("RUNTIME_KNOBS", "parser", "runtime_knob", "stage_main", "tracking_uri_from_params", "write_json"),
    "_track": ("run_track",),
    "_train": ("MissingBackendError", "rollout_processes", "run_init", "run_select", "run_tokenizer", "run_train"),
}
_HOME = homes(_EXPORTS)
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


def __dir__() -> list[str]:
    return __all__
