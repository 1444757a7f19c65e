"""Deviations, added arms, sign-offs, the read-point rule, result records, and ``nego audit``.

``registry/<study>/`` is living data beside the frozen ``protocol/<study>/``: one YAML file per
deviation (append-only), the arms added outside the frozen matrix, and hand-read sign-offs.
The audit checks results and registry against the protocol. See ``docs/protocol.md``.
"""

from negotiation.registry._audit import AuditReport, Finding, run_audit
from negotiation.registry._checks import CHECKS
from negotiation.registry._continuations import (
    Branch,
    ContinuationEntry,
    Continuations,
    continuation_branches,
    continuation_problems,
)
from negotiation.registry._cli import audit_command, deviation_app, print_report
from negotiation.registry._deviation import CATEGORIES, Cell, Deviation, DeviationLog, load_deviation_log
from negotiation.registry._effective import effective_protocol, value_problems
from negotiation.registry._entries import AddedArm, AddedArms, Registry, SignOff, load_registry, registry_dir
from negotiation.registry._readpoint import (
    CheckpointError,
    ReadPoint,
    list_checkpoint_steps,
    select_checkpoint,
    select_read_point,
)
from negotiation.registry._records import (
    PilotCell,
    PilotRecord,
    ResultsLayout,
    SamplingRecord,
    SamplingUse,
    SelectionRecord,
    write_record,
)
from negotiation.registry._scaffold import new_deviation

__all__ = [
    "CATEGORIES", "CHECKS", "AddedArm", "AddedArms", "AuditReport", "Branch", "Cell", "CheckpointError",
    "ContinuationEntry", "Continuations", "continuation_branches", "continuation_problems",
    "effective_protocol", "value_problems",
    "Deviation", "DeviationLog", "Finding", "PilotCell", "PilotRecord", "ReadPoint", "Registry",
    "ResultsLayout", "SamplingRecord", "SamplingUse", "SelectionRecord", "SignOff", "audit_command",
    "deviation_app", "list_checkpoint_steps", "load_deviation_log", "load_registry", "new_deviation",
    "print_report", "registry_dir", "run_audit", "select_checkpoint", "select_read_point", "write_record",
]
