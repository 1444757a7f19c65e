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

from pathlib import Path
from typing import Literal

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel
from negotiation.registry._checks import CHECKS
from negotiation.registry._findings import AuditContext, Check, Finding
from negotiation.study import ResultsLayout, Study, checked_lock, default_root, load_registry, load_study
from negotiation.study import results_dir as default_results

__all__ = ["AuditReport", "run_audit"]


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


def _load_context(study: str | Study, root: Path, results_dir: Path, profile: str | None) -> AuditContext:
    """The checks' inputs: the study as loaded (once) and read in the profile of the results
    (``profile``, else ``Study.results_profile``); when it does not load, its registry and lock
    alone, so their own findings are still reported."""
    try:
        loaded = study if isinstance(study, Study) else load_study(study, root)
        return AuditContext(ResultsLayout(results_dir),
                            loaded.in_profile(profile or loaded.results_profile(results_dir)))
    except ConfigError as exc:
        if isinstance(study, Study):
            raise
        return AuditContext(ResultsLayout(results_dir), None, str(exc), load_registry(study, root),
                            checked_lock(study, root))


def _run_check(check: Check, ctx: AuditContext) -> list[Finding]:
    if check.needs_study and ctx.study is None:
        first = (ctx.study_error or "").splitlines()[:1]
        return [Finding(check=check.name, status="fail", evidence=f"cannot check: study invalid ({first[0] if first else ''})")]
    if check.needs_results and not ctx.layout.exists():
        return [Finding(check=check.name, status="skipped",
                        evidence=f"no results under {ctx.show(ctx.layout.dir)} (declared state)")]
    try:
        return list(check.run(ctx))
    except ConfigError as exc:
        return [Finding(check=check.name, status="fail", evidence=line) for line in str(exc).splitlines()]


def run_audit(study: str | Study, *, root: Path | None = None, results_dir: Path | None = None,
              profile: str | None = None) -> AuditReport:
    """Run every check of ``CHECKS`` on ``study``.

    Args:
        study: a loaded ``Study``, or its name (``protocol/<study>/``; loaded here, and audited
            even when it does not load).
        root: repository root; default this checkout.
        results_dir: where the pipeline wrote results; default ``<root>/outputs/<study>`` (the
            GPU profile's ``outputs/<study>-gpu``).
        profile: the hardware profile whose evaluation design the results follow; default the
            one ``Study.results_profile`` reads from them.
    """
    root = study.root if isinstance(study, Study) else Path(root or default_root())
    name = study.name if isinstance(study, Study) else study
    results = Path(results_dir) if results_dir is not None else default_results(name, root, profile or "cpu")
    ctx = _load_context(study, root, results, profile)
    findings = [finding for check in CHECKS for finding in _run_check(check, ctx)]
    return AuditReport(version=1, study=name, results_dir=ctx.show(results),
                       declared_only=not ctx.layout.exists(), findings=tuple(findings))
