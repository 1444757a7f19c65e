"""Audit checks on the declared read steps and continuation branches (no results needed).

The step-matching rule reads arms at the protocol's named ``training.read_points`` (combined
steps) and branches a continuation at ``initial_steps``. An arm whose entry reads an explicit
``read_step`` instead (the paper's ``_56`` arms) must say why (``read_reason``) and cite an
active deviation that covers it; a continuation that branches elsewhere must be recorded in
``registry/<study>/continuations.yaml`` with the deviations that cover it. The results check
``read_points`` then holds each selection record to these declared steps.
"""

from __future__ import annotations

from typing import Iterator

from negotiation.registry._findings import AuditContext, Finding
from negotiation.study import continuation_problems

__all__ = ["READ_CATEGORIES", "BRANCH_CATEGORIES", "check_continuations", "check_read_steps"]

READ_CATEGORIES = ("read_point", "checkpoint_substitution", "arm_added")
"""Deviation categories that can explain a declared read step other than the rule's."""
BRANCH_CATEGORIES = ("recipe_change", "checkpoint_substitution")
"""Deviation categories that can explain a continuation branch other than the rule's."""


def _cited(ctx: AuditContext, arm: str, cited: tuple[int, ...] | None, categories: tuple[str, ...]) -> list[int]:
    """Active deviations of ``categories`` covering ``arm``; only those in ``cited`` when given."""
    ids = ctx.registry.deviations.covering(arm, categories)
    return [i for i in ids if cited is None or i in cited]


def check_read_steps(ctx: AuditContext) -> Iterator[Finding]:
    study, branches = ctx.study, ctx.branches()
    for name, arm in sorted(ctx.planned_arms().items()):
        if arm.kind != "trained":
            continue
        added = not study.is_frozen(name)
        where = (f"{ctx.show(ctx.registry.dir / 'arms.yaml')}:added_arms.{name}" if added
                 else f"{ctx.show(study.dir / 'arms.yaml')}:arms.{name}")
        combined = study.read_step(arm)
        branch = branches[arm.run].branch_step if arm.run in branches else 0
        own = f"own step {combined - branch} of run {arm.run}" + (f" (branched at {branch})" if branch else "")
        if arm.read_step is None:
            yield Finding(check="read_steps", status="pass",
                          evidence=f"{name}: read point {arm.read_point!r}, combined step {combined} = {own}")
            continue
        points = dict(study.protocol.recipe_for(arm.size).read_points)
        evidence = f"{where}.read_step: combined step {combined} = {own}, not a read point of the protocol {points}"
        if not arm.read_reason:
            yield Finding(check="read_steps", status="fail", evidence=f"{evidence}; the entry gives no read_reason")
            continue
        ids = _cited(ctx, name, arm.deviations if added else None, READ_CATEGORIES)
        if ids:
            yield Finding(check="read_steps", status="covered", evidence=f"{evidence} ({arm.read_reason})",
                          deviations=tuple(ids))
        else:
            yield Finding(check="read_steps", status="fail", evidence=f"{evidence}; no active deviation "
                          f"({' or '.join(READ_CATEGORIES)}){' the entry cites' if added else ''} covers it")


def check_continuations(ctx: AuditContext) -> Iterator[Finding]:
    where = ctx.show(ctx.registry.dir / "continuations.yaml")
    planned = ctx.planned_arms()
    problems = continuation_problems(ctx.study, planned, ctx.study.continuations)
    yield from (Finding(check="continuations", status="fail", evidence=f"{where}:{key}: {reason}")
                for key, reason in problems)
    for run, branch in ctx.branches().items():
        evidence = (f"branches from {branch.parent_run} at step {branch.branch_step} and trains "
                    f"{branch.steps} steps")
        if branch.rule:
            yield Finding(check="continuations", status="pass", evidence=f"{run}: {evidence}, the rule's")
            continue
        readers = sorted(name for name, arm in planned.items() if arm.run == run)
        ids = sorted({i for arm in readers for i in _cited(ctx, arm, branch.deviations, BRANCH_CATEGORIES)})
        if ids:
            yield Finding(check="continuations", status="covered", evidence=f"{where}:continuations.{run}: {evidence}",
                          deviations=tuple(ids))
        else:
            yield Finding(check="continuations", status="fail", evidence=(
                f"{where}:continuations.{run}.deviations: {list(branch.deviations)} holds no active "
                f"{' or '.join(BRANCH_CATEGORIES)} entry covering {readers}"))
