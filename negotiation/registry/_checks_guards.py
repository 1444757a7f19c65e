"""Audit check ``guard_thresholds``: every guard has a threshold, and the project's are marked as such.

A threshold the frozen protocol leaves null must come from ``registry/<study>/guards.yaml`` (the
project's entry), never from both; post-hoc thresholds there must cite the active ``analysis_added``
entry that added the post-hoc guards.
"""

from __future__ import annotations

from typing import Iterator

from negotiation.errors import ConfigError
from negotiation.registry._findings import AuditContext, Finding
from negotiation.study import PRESPECIFIED_THRESHOLDS, guard_rule_problems

__all__ = ["check_guard_thresholds"]


def check_guard_thresholds(ctx: AuditContext) -> Iterator[Finding]:
    path = ctx.registry.dir / "guards.yaml"
    shown = ctx.show(path)
    try:
        added = ctx.study.guard_thresholds
    except ConfigError as exc:
        yield from (Finding(check="guard_thresholds", status="fail", evidence=line) for line in str(exc).splitlines())
        return
    failures = [f"{ctx.study_name}:{where}: {reason}" for where, reason in guard_rule_problems(ctx.study.protocol, added)]
    if added is not None and added.post_hoc is not None:
        active = {e.id: e for e in ctx.registry.deviations.active()}
        cited = [i for i in added.deviations if i in active and active[i].category == "analysis_added"]
        if not cited:
            failures.append(f"{shown}:deviations: post-hoc thresholds must cite an active analysis_added deviation "
                            f"(cited: {list(added.deviations) or 'none'})")
    yield from (Finding(check="guard_thresholds", status="fail", evidence=line) for line in failures)
    if failures:
        return
    frozen = [f"{g}.{k}" for g, keys in PRESPECIFIED_THRESHOLDS.items() for k in keys
              if getattr(getattr(ctx.study.protocol.guards, g), k) is not None]
    project = sum(len(keys) for keys in PRESPECIFIED_THRESHOLDS.values()) - len(frozen)
    post = (f"post-hoc thresholds from {shown} (deviations {list(added.deviations)})" if added and added.post_hoc
            else "post-hoc thresholds: the schema's defaults (this project's)")
    yield Finding(check="guard_thresholds", status="pass",
                  evidence=f"{len(frozen)} prespecified thresholds frozen in the protocol, {project} this project's "
                           f"({shown if project else 'none'}); {post}")
