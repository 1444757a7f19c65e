"""The study on disk: one loaded ``Study``, where its results live, and the records it writes.

A study is ``protocol/<study>/`` (protocol, frozen arm matrix, lock) plus the arms the registry
adds (``registry/<study>/arms.yaml``) and its continuation branches. Everything above this
package (registry, training, evaluation, analysis, pipeline) reads the study through it:
``load_study`` (protocol and every arm, merged once), ``ResultsLayout`` (every results path),
the records each stage writes (selection, pilot, sampling, contrasts), and the lock.
"""

from negotiation.study._arms import AddedArm, AddedArms, load_added_arms, registry_dir
from negotiation.study._continuations import (
    Branch,
    ContinuationEntry,
    Continuations,
    continuation_branches,
    continuation_problems,
)
from negotiation.study._contrasts import ContrastResult, ContrastSpec, Interval
from negotiation.study._layout import ResultsLayout
from negotiation.study._lock import Lock, LockError, checked_lock, freeze, lock_problems, protocol_hash, verify
from negotiation.study._records import (
    PilotCell,
    PilotRecord,
    SamplingRecord,
    SamplingUse,
    SelectionRecord,
    write_record,
)
from negotiation.study._study import Study, arm_problems, default_root, load_study, resolve_read_step, study_dir

__all__ = [
    "AddedArm", "AddedArms", "Branch", "ContinuationEntry", "Continuations", "ContrastResult", "ContrastSpec",
    "Interval", "Lock", "LockError", "PilotCell", "PilotRecord", "ResultsLayout", "SamplingRecord", "SamplingUse",
    "SelectionRecord", "Study", "arm_problems", "checked_lock", "continuation_branches", "continuation_problems",
    "default_root", "freeze", "load_added_arms", "load_study", "lock_problems", "protocol_hash", "registry_dir",
    "resolve_read_step", "study_dir", "verify",
]
