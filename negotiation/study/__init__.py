"""The study on disk: one loaded ``Study``, where its results live, and the records it writes.

A study is ``protocol/<study>/`` (protocol, frozen arm matrix, lock) plus ``registry/<study>/``
(added arms, continuation branches, deviations, sign-offs). Everything above this package reads
the study through it: ``load_study`` (called once per process; the only reader of those files),
``ResultsLayout`` (every results path), the records each stage writes, and the lock.
"""

from negotiation.study._arms import (
    AddedArm,
    AddedArms,
    added_arms_document,
    added_arms_path,
    arm_entry_as_written,
    arm_problems,
    load_added_arms,
    merge_arms,
    resolve_read_step,
)
from negotiation.study._continuations import (
    Branch,
    ContinuationEntry,
    Continuations,
    continuation_branches,
    continuation_problems,
    continuations_path,
    load_continuations,
)
from negotiation.study._deviation import CATEGORIES, FILE_NAME, Cell, Deviation, DeviationLog, deviation_filename, load_deviation_log, slugify
from negotiation.study._deviation_index import INDEX_FILE, DeviationIndex, append_to_index, appended_only
from negotiation.study._effective import effective_protocol, key_problems, value_problems
from negotiation.study._registry import Registry, SignOff, load_registry
from negotiation.study._contrasts import ContrastResult, ContrastSpec, Interval
from negotiation.study._guards import (
    PRESPECIFIED_THRESHOLDS,
    GuardRules,
    GuardThresholds,
    PostHocThresholds,
    ProjectPrespecified,
    guard_rule_problems,
    load_guard_thresholds,
    resolve_guards,
    study_guard_rules,
)
from negotiation.study._panel import PANEL_FILE, Panel, load_panel, panel_path, panel_problems
from negotiation.study._layout import GPU_SUFFIX, RESULTS_ROOT, ResultsLayout, default_root, registry_dir, results_dir, study_dir
from negotiation.study._prices import ModelPrice, TokenPrices, load_token_prices, spec_model
from negotiation.study._lock import Lock, LockError, checked_lock, freeze, lock_problems, protocol_hash, verify
from negotiation.study._records import (
    PilotCell,
    PilotRecord,
    SamplingRecord,
    SamplingUse,
    SelectionRecord,
    gate_passes,
    write_record,
)
from negotiation.study._study import Study, as_study, load_study

__all__ = [
    "PANEL_FILE", "Panel", "load_panel", "panel_path", "panel_problems",
    "CATEGORIES", "FILE_NAME", "INDEX_FILE", "Cell", "Deviation", "DeviationIndex", "DeviationLog", "Registry",
    "SignOff", "append_to_index", "appended_only", "deviation_filename", "effective_protocol",
    "key_problems", "load_deviation_log", "load_registry", "slugify", "value_problems",
    "PRESPECIFIED_THRESHOLDS", "GuardRules", "GuardThresholds", "PostHocThresholds", "ProjectPrespecified",
    "guard_rule_problems", "load_guard_thresholds", "resolve_guards", "study_guard_rules",
    "ModelPrice", "TokenPrices", "load_token_prices", "spec_model",
    "GPU_SUFFIX", "RESULTS_ROOT", "AddedArm", "AddedArms", "Branch", "ContinuationEntry", "Continuations", "ContrastResult",
    "ContrastSpec", "Interval", "Lock", "LockError", "PilotCell", "PilotRecord", "ResultsLayout", "SamplingRecord",
    "SamplingUse", "SelectionRecord", "Study", "added_arms_document", "added_arms_path", "arm_entry_as_written",
    "arm_problems", "as_study", "checked_lock",
    "continuation_branches", "continuation_problems", "continuations_path", "default_root", "freeze", "gate_passes",
    "load_added_arms", "load_continuations", "load_study", "lock_problems", "merge_arms", "protocol_hash",
    "registry_dir", "resolve_read_step", "results_dir", "study_dir", "verify", "write_record",
]
