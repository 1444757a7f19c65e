"""``nego audit``: is every departure from the frozen protocol covered by a logged deviation?

The audit fails closed. Each check yields findings with a status:

- ``pass``: matches the protocol;
- ``covered``: departs from it, and an active deviation of an accepted category covers it;
- ``fail``: departs from it uncovered, or could not be checked (unreadable file, invalid protocol);
- ``pending``: waits on a person (an arm not yet hand-read), shown but not failing;
- ``skipped``: needs results and there are none (the declared state of a study).

The report passes when no finding fails. ``CHECKS`` is the single list the CLI help is built
from, so the help cannot claim a check that does not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Literal

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, StrictModel
from negotiation.study import (
    Branch,
    ResultsLayout,
    Study,
    checked_lock,
    continuation_branches,
    continuation_problems,
    default_root,
    load_study,
)
from negotiation.registry._entries import Registry, load_registry

__all__ = ["AuditContext", "AuditReport", "Check", "Finding", "Status", "cover", "run_audit"]

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


class AuditReport(StrictModel):
    """Everything ``nego audit`` found, in check order."""

    version: Literal[1]
    """Report format version."""
    study: str
    """Study audited."""
    results_dir: str
    """Results directory read (it may not exist: then the declared state was audited)."""
    declared_only: bool
    """True when there were no results, so only the protocol and registry were audited."""
    findings: tuple[Finding, ...]
    """Compliance table rows."""

    @property
    def passed(self) -> bool:
        """True when no finding failed."""
        return all(f.status != "fail" for f in self.findings)


@dataclass
class AuditContext:
    """What the checks read, loaded once."""

    study_name: str
    root: Path
    registry: Registry
    layout: ResultsLayout
    study: Study | None = None
    study_error: str | None = None
    lock_issues: list[str] = field(default_factory=list)
    lock_hash: str | None = None

    def planned_arms(self) -> dict[str, Arm]:
        """Frozen arms, then valid added arms (a name clash keeps the frozen one)."""
        frozen = dict(self.study.arms) if self.study else {}
        return {**{k: v for k, v in self.registry.added.items() if k not in frozen}, **frozen}

    def branches(self) -> dict[str, Branch]:
        """Every continuation run of the planned arms with its branch (entries with problems
        fall back to the rule here; check ``continuations`` reports them)."""
        planned, entries = self.planned_arms(), self.registry.continuations
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


def _load_context(study: str, root: Path, results_dir: Path) -> AuditContext:
    ctx = AuditContext(study, root, load_registry(study, root), ResultsLayout(results_dir))
    try:
        ctx.study = load_study(study, root)
    except ConfigError as exc:
        ctx.study_error = str(exc)
    lock, ctx.lock_issues = checked_lock(study, root)
    if lock is not None and not ctx.lock_issues:
        ctx.lock_hash = lock.protocol_hash
    return ctx


def _run_check(check: Check, ctx: AuditContext) -> list[Finding]:
    if check.needs_study and ctx.study is None:
        first = (ctx.study_error or "").splitlines()[:1]
        return [Finding(check=check.name, status="fail", evidence=f"cannot check: protocol invalid ({first[0] if first else ''})")]
    if check.needs_results and not ctx.layout.exists():
        return [Finding(check=check.name, status="skipped",
                        evidence=f"no results under {ctx.show(ctx.layout.dir)} (declared state)")]
    try:
        return list(check.run(ctx))
    except ConfigError as exc:
        return [Finding(check=check.name, status="fail", evidence=line) for line in str(exc).splitlines()]


def run_audit(study: str, *, root: Path | None = None, results_dir: Path | None = None) -> AuditReport:
    """Run every check of ``CHECKS`` on ``study``.

    Args:
        study: study name (``protocol/<study>/``, ``registry/<study>/``).
        root: repository root; default this checkout.
        results_dir: where the pipeline wrote results; default ``<root>/outputs/<study>``.
    """
    from negotiation.registry._checks import CHECKS

    root = Path(root or default_root())
    results = Path(results_dir) if results_dir is not None else root / "outputs" / study
    ctx = _load_context(study, root, results)
    findings = [finding for check in CHECKS for finding in _run_check(check, ctx)]
    return AuditReport(version=1, study=study, results_dir=ctx.show(results),
                       declared_only=not ctx.layout.exists(), findings=tuple(findings))
