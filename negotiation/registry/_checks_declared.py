"""Audit checks on the declared state: lock, protocol, registry files, arms, seeds, sign-offs."""

from __future__ import annotations

import datetime as dt

from typing import Iterator

from negotiation.errors import ConfigError
from negotiation.study import arm_problems, panel_path, value_problems
from negotiation.registry._findings import AuditContext, Finding, cover
from negotiation.registry._deviation_index import history_problems
from negotiation.registry._entries import deleted_signoffs

__all__ = [
    "check_arms", "check_deviation_arms", "check_deviation_ids", "check_hand_read", "check_lock",
    "check_protocol", "check_registry_files", "check_seed_blocks", "check_supersession",
]


def _ok(check: str, evidence: str) -> Finding:
    return Finding(check=check, status="pass", evidence=evidence)


def _fail(check: str, evidence: str) -> Finding:
    return Finding(check=check, status="fail", evidence=evidence)


def check_lock(ctx: AuditContext) -> Iterator[Finding]:
    if ctx.lock_issues:
        yield from (_fail("lock", line) for line in ctx.lock_issues)
        return
    yield _ok("lock", f"frozen files match {ctx.show(ctx.root / 'protocol' / ctx.study_name / 'lock.yaml')}; "
                      f"protocol hash {ctx.lock_hash}")


def check_protocol(ctx: AuditContext) -> Iterator[Finding]:
    if ctx.study is None:
        yield from (_fail("protocol", line) for line in (ctx.study_error or "").splitlines())
        return
    study = ctx.study
    yield _ok("protocol", f"{study.show(study.dir / 'protocol.yaml')} and arms.yaml valid; "
                          f"{len(study.frozen_arms)} frozen arms, {len(study.protocol.domains.evaluated)} domain files")


def check_registry_files(ctx: AuditContext) -> Iterator[Finding]:
    reg = ctx.registry
    # git history is read here, by the audit alone, not on every registry load of a stage
    problems = [*reg.problems, *deleted_signoffs(reg.dir / "signoffs", ctx.root)]
    if problems:
        yield from (_fail("registry_files", line) for line in problems)
        return
    yield _ok("registry_files", f"{ctx.show(reg.dir)}: {len(reg.deviations.entries)} deviations, "
                                f"{len(reg.added)} added arms, {len(reg.signoffs)} sign-offs valid")


def check_deviation_ids(ctx: AuditContext) -> Iterator[Finding]:
    log = ctx.registry.deviations
    ids = sorted(log.entries)
    folder = ctx.registry.dir / "deviations"
    history = history_problems(folder, ctx.root) if folder.is_dir() else []
    bad = bool(log.naming_problems or log.index_problems or history)
    yield from (_fail("deviation_ids", line) for line in [*log.naming_problems, *log.index_problems, *history])
    for expected, got in zip(range(1, len(ids) + 1), ids):
        if expected != got:
            yield _fail("deviation_ids", f"{ctx.show(log.paths[got])}:id: {got} breaks the sequence "
                                         f"(expected {expected}; ids run 1, 2, 3, ... without gaps)")
            bad = True
            break
    today = dt.date.today()
    for entry_id in ids:
        if log.entries[entry_id].date > today:
            yield _fail("deviation_ids", f"{ctx.show(log.paths[entry_id])}:date: {log.entries[entry_id].date} is in "
                                         f"the future (today is {today}); an entry is dated the day it is issued")
            bad = True
    for prev, cur in zip(ids, ids[1:]):
        if log.entries[cur].date < log.entries[prev].date:
            yield _fail("deviation_ids", f"{ctx.show(log.paths[cur])}:date: {log.entries[cur].date} is before "
                                         f"entry {prev}'s {log.entries[prev].date} (the log is append-only)")
            bad = True
    if not bad:
        yield _ok("deviation_ids", f"ids 1..{len(ids)} sequential, dates non-decreasing, all in index.yaml as issued"
                  if ids else "no deviations")


def check_supersession(ctx: AuditContext) -> Iterator[Finding]:
    log = ctx.registry.deviations
    seen: dict[int, int] = {}
    bad = False
    for entry_id, entry in sorted(log.entries.items()):
        target = entry.supersedes
        if target is None:
            continue
        where = f"{ctx.show(log.paths[entry_id])}:supersedes"
        if target not in log.entries:
            yield _fail("supersession", f"{where}: no entry {target}")
        elif target >= entry_id:
            yield _fail("supersession", f"{where}: {target} is not an earlier entry (an amendment comes after)")
        elif target in seen:
            yield _fail("supersession", f"{where}: entry {target} is already superseded by entry {seen[target]}")
        else:
            seen[target] = entry_id
            continue
        bad = True
    if not bad:
        chains = len(seen)
        yield _ok("supersession", f"{chains} amended entr{'y' if chains == 1 else 'ies'}; every chain well formed")


def check_deviation_arms(ctx: AuditContext) -> Iterator[Finding]:
    planned = ctx.planned_arms()
    buyers = set(ctx.study.protocol.buyers.evaluation)
    domains = set(ctx.study.protocol.domains.evaluated)
    bad = False
    for entry_id, entry in sorted(ctx.registry.deviations.entries.items()):
        where = ctx.show(ctx.registry.deviations.paths[entry_id])
        for i, arm in enumerate(entry.arms):
            if arm not in planned:
                bad = True
                yield _fail("deviation_arms", f"{where}:arms.{i}: {arm!r} is not a frozen or added arm")
        for i, cell in enumerate(entry.cells):
            for key, value, known in (("arm", cell.arm, planned), ("buyer", cell.buyer, buyers),
                                      ("domain", cell.domain, domains)):
                if value is not None and value not in known:
                    bad = True
                    yield _fail("deviation_arms", f"{where}:cells.{i}.{key}: unknown {key} {value!r}")
    for problem in value_problems(ctx.study.protocol, ctx.registry):
        bad = True
        yield _fail("deviation_arms", problem)
    for problem in [] if bad else _run_value_problems(ctx.study):
        bad = True
        yield _fail("deviation_arms", problem)
    if not bad:
        yield _ok("deviation_arms", "every arm, buyer, domain and protocol key a deviation names exists")


def _run_value_problems(study) -> list[str]:
    """Each arm whose deviation values change its size's built-once fields (``Study.size_value_problem``)
    and each training run whose arms' values disagree or reshape it (``Study.run_protocol``), found
    here rather than when the run trains."""
    problems = [p for p in (study.size_value_problem(arm) for arm in sorted(study.arms)) if p]
    runs = sorted({r for a in study.arms.values() if a.kind == "trained" for r in (a.run, a.parent_run) if r})
    for run in runs:
        try:
            study.run_protocol(run)
        except ConfigError as exc:
            if str(exc) not in problems:
                problems.append(str(exc))
    return problems


def _added_arm_findings(ctx: AuditContext, name: str) -> Iterator[Finding]:
    arm, log = ctx.study.added_arms[name], ctx.registry.deviations
    where = f"{ctx.show(ctx.registry.dir / 'arms.yaml')}:added_arms.{name}"
    for key, reason in arm_problems(ctx.study.protocol, {name: arm}, other_arms=ctx.study.frozen_arms,
                                    section="added_arms"):
        yield _fail("arms", f"{ctx.show(ctx.registry.dir / 'arms.yaml')}:{key}: {reason}")
    active = {e.id for e in log.active()}
    for entry_id in arm.deviations:
        entry = log.entries.get(entry_id)
        if entry is None or entry_id not in active or not (entry.all_arms or name in entry.named_arms()):
            state = "does not exist" if entry is None else (
                "is superseded" if entry_id not in active else "does not list the arm")
            yield _fail("arms", f"{where}.deviations: entry {entry_id} {state}")
    yield cover(ctx, "arms", name, ("arm_added",), f"{name}: added outside the frozen matrix")


def check_arms(ctx: AuditContext) -> Iterator[Finding]:
    yield _ok("arms", f"{len(ctx.study.frozen_arms)} arms of the frozen matrix")
    for name in sorted(ctx.study.added_arms):
        yield from _added_arm_findings(ctx, name)
    planned = ctx.planned_arms()
    for name, paths in sorted(ctx.layout.arms_with_results().items()):
        if name not in planned:
            shown = ", ".join(ctx.show(p) for p in paths)
            yield _fail("arms", f"{shown}:arm: {name!r} was evaluated or selected but is neither in the frozen "
                                f"matrix nor added in {ctx.show(ctx.registry.dir / 'arms.yaml')}")


def check_panel(ctx: AuditContext) -> Iterator[Finding]:
    """The buyer panel, if any, cites active ``analysis_added`` entries only (it is outside the freeze)."""
    panel = ctx.study.panel
    if panel is None:
        yield _ok("panel", "no buyer panel")
        return
    where = f"{ctx.show(panel_path(ctx.study.name, ctx.study.root))}:deviations"
    log, active = ctx.registry.deviations, {e.id for e in ctx.registry.deviations.active()}
    bad = False
    for entry_id in panel.deviations:
        entry = log.entries.get(entry_id)
        if entry is None or entry_id not in active or entry.category != "analysis_added":
            bad = True
            state = "does not exist" if entry is None else (
                "is superseded" if entry_id not in active else f"has category {entry.category}, not analysis_added")
            yield _fail("panel", f"{where}: entry {entry_id} {state}")
    if not bad:
        yield Finding(check="panel", status="covered", deviations=tuple(panel.deviations),
                      evidence=f"buyer panel of {len(panel.buyers)} ({', '.join(panel.buyers)}), exploratory")


def check_seed_blocks(ctx: AuditContext) -> Iterator[Finding]:
    seeds = ctx.study.protocol.seeds
    where = ctx.show(ctx.study.dir / "protocol.yaml")
    overlaps = ctx.study.protocol.seed_overlaps()
    for a, b in overlaps:
        block_a, block_b = getattr(seeds, a), getattr(seeds, b)
        yield _fail("seed_blocks", f"{where}:seeds.{b}: [{block_b.start}, {block_b.stop}) overlaps seeds.{a} "
                                   f"[{block_a.start}, {block_a.stop})")
    if not overlaps:
        yield _ok("seed_blocks", f"training [{seeds.training.start}, {seeds.training.stop}), evaluation "
                                 f"[{seeds.evaluation.start}, {seeds.evaluation.stop}), pilot and extension disjoint")


def check_hand_read(ctx: AuditContext) -> Iterator[Finding]:
    guard = ctx.study.protocol.guards.hand_read
    planned = ctx.planned_arms()
    pending = []
    for arm, signoff in sorted(ctx.registry.signoffs.items()):
        where = ctx.show(ctx.registry.dir / "signoffs" / f"{arm}.yaml")
        needed = guard.transcripts_per_domain_family * 2
        if arm not in planned:
            yield _fail("hand_read", f"{where}:arm: {arm!r} is not a frozen or added arm")
        elif set(signoff.domain_families) != {"training", "held_out"} or signoff.transcripts_read < needed:
            yield _fail("hand_read", f"{where}:transcripts_read: {signoff.transcripts_read} over "
                                     f"{list(signoff.domain_families)}; the guard needs {needed} over training and held_out")
        elif signoff.verdict == "fail":
            yield cover(ctx, "hand_read", arm, ("gate_override",), f"{where}:verdict: fail ({signoff.reader})")
        else:
            yield _ok("hand_read", f"{arm}: signed off by {signoff.reader} on {signoff.date}")
    for arm, definition in sorted(planned.items()):
        if definition.kind == "trained" and arm not in ctx.registry.signoffs:
            pending.append(arm)
    if pending:
        status = "fail" if guard.blocking else "pending"
        yield Finding(check="hand_read", status=status,
                      evidence=f"{len(pending)} trained arms await a hand-read sign-off: {', '.join(pending)}")
