"""The study as DVC stages: the plan DVC iterates over and one library function per stage."""

from negotiation.pipeline._cli import pipeline_app, status_command
from negotiation.pipeline._analysis import run_analyze, run_audit_stage, run_report, run_validate
from negotiation.pipeline._evaluate import GateClosedError, arm_metrics, run_evaluate_stage, run_pilot_stage
from negotiation.pipeline._plan import all_arms, build_plan, plan_path, render_plan, write_plan
from negotiation.pipeline._scenarios import run_scenarios, scenario_table
from negotiation.pipeline._stage import parser, stage_main, tracking_uri_from_params, write_json
from negotiation.pipeline._train import MissingBackendError, run_init, run_select, run_train

__all__ = [
    "GateClosedError", "pipeline_app", "status_command", "MissingBackendError", "all_arms", "arm_metrics", "build_plan", "parser",
    "plan_path", "render_plan", "run_analyze", "run_audit_stage", "run_evaluate_stage", "run_init",
    "run_pilot_stage", "run_report", "run_scenarios", "run_select", "run_train", "run_validate",
    "scenario_table", "stage_main", "tracking_uri_from_params", "write_json", "write_plan",
]
