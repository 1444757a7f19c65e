"""What the audit's checks share: the loaded inputs (``AuditContext``), a finding, a check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Literal

from negotiation.protocol import Arm, StrictModel
from negotiation.study import (Branch, Lock, Registry, ResultsLayout, Study, continuation_branches,
                              continuation_problems)

__all__ = ["AuditContext", "Check", "CheckFn", "Finding", "Status", "cover"]

Status = Literal["pass", "covered", "fail", "pending", "skipped"]


class Finding(StrictModel):
    """One row of the compliance table."""

    check: str
    """Check name (see ``CHECKS``)."""
    status: Status
    """Outcome."""
    evidence: str
    """What was compared, naming the file and key where something departs."""
    deviations: tuple[int, ...] = ()
    """Ids of the active deviations that cover a ``covered`` finding."""


@dataclass
class AuditContext:
    """What the checks read: the loaded ``Study`` (name, root, registry, lock: read once, as every
    stage reads them) and the results layout. When the study does not load, ``study_error`` says
    why and the registry and lock are read alone, so their own findings are still reported."""

    layout: ResultsLayout
    study: Study | None = None
    study_error: str | None = None
    registry_alone: Registry | None = None
    """``registry/<study>/`` read alone, when the study did not load."""
    lock_alone: tuple[Lock | None, list[str]] = (None, [])
    """``checked_lock`` of the study's name, when it did not load."""

    @property
    def registry(self) -> Registry:
        return self.study.registry if self.study else self.registry_alone

    @property
    def study_name(self) -> str:
        return self.registry.study

    @property
    def root(self) -> Path:
        return self.registry.root

    @property
    def lock_issues(self) -> list[str]:
        """Every difference between the lock and the frozen files."""
        return (self.study.lock_state if self.study else self.lock_alone)[1]

    @property
    def lock_hash(self) -> str | None:
        """The verified protocol hash; None when the lock is missing or differs."""
        lock, issues = self.study.lock_state if self.study else self.lock_alone
        return lock.protocol_hash if lock is not None and not issues else None

    def planned_arms(self) -> dict[str, Arm]:
        """Every arm of the study (``Study.arms``: frozen, then added); none when it did not load."""
        return dict(self.study.arms) if self.study else {}

    def branches(self) -> dict[str, Branch]:
        """Every continuation run of the planned arms with its branch (entries with problems
        fall back to the rule here; check ``continuations`` reports them)."""
        planned, entries = self.planned_arms(), self.study.continuations
        bad = {key.split(".")[1] for key, _ in continuation_problems(self.study, planned, entries)}
        return continuation_branches(self.study, planned, {k: v for k, v in entries.items() if k not in bad})

    def show(self, path: Path) -> str:
        return self.registry.show(path)


CheckFn = Callable[[AuditContext], Iterator[Finding]]


@dataclass(frozen=True)
class Check:
    """A named check with the one-line description the CLI help shows."""

    name: str
    description: str
    run: CheckFn
    needs_study: bool = True
    needs_results: bool = False


def cover(
    ctx: AuditContext, check: str, arm: str, categories: tuple[str, ...], evidence: str, buyer: str | None = None,
    exclude: tuple[int, ...] = (),
) -> Finding:
    """A ``covered`` finding when an active deviation of ``categories`` covers the arm, else ``fail``.

    ``exclude``: entries that may not cover this finding (those an arm's entry already cites for
    its declared read, which cannot also excuse a read elsewhere)."""
    ids = [i for i in ctx.registry.deviations.covering(arm, categories, buyer=buyer) if i not in exclude]
    if ids:
        return Finding(check=check, status="covered", evidence=evidence, deviations=tuple(ids))
    return Finding(check=check, status="fail",
                   evidence=f"{evidence}; no active deviation ({' or '.join(categories)}) covers it")


