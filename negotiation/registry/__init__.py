"""Deviations, sign-offs, the read-point rule, and ``nego audit``.

``registry/<study>/`` is living data beside the frozen ``protocol/<study>/``: one YAML file per
deviation (append-only), the arms added outside the frozen matrix, and hand-read sign-offs.
The audit checks results and registry against the protocol. See ``docs/protocol.md``.
"""

from negotiation.registry._audit import AuditReport, run_audit
from negotiation.registry._findings import Finding
from negotiation.registry._checks import CHECKS
from negotiation.study import (  # the study reads registry/<study>/ once; these names stay here too
    CATEGORIES,
    INDEX_FILE,
    Cell,
    Deviation,
    DeviationLog,
    Registry,
    SignOff,
    appended_only,
    effective_protocol,
    load_deviation_log,
    load_registry,
    value_problems,
)
from negotiation.registry._readpoint import (
    CheckpointError,
    ReadPoint,
    list_checkpoint_steps,
    select_checkpoint,
    select_read_point,
)
from negotiation.registry._scaffold import new_deviation, parse_cell
from negotiation.registry._scaffold_arm import arm_fields, key_values
from negotiation.registry._signoffs import SignoffError, record_signoff

__all__ = [
    "CATEGORIES", "CHECKS", "INDEX_FILE", "AuditReport", "Cell", "CheckpointError", "Deviation", "DeviationLog", "Finding",
    "ReadPoint", "Registry", "SignOff", "SignoffError", "appended_only", "arm_fields", "effective_protocol", "key_values",
    "list_checkpoint_steps", "load_deviation_log", "load_registry", "new_deviation", "parse_cell", "record_signoff", "run_audit",
    "select_checkpoint", "select_read_point", "value_problems",
]
