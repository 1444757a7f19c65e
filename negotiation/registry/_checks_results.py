"""Audit checks on the pipeline's records: provenance, read points, pilot gate, sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, TypeVar

from pydantic import BaseModel

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, SamplingSettings, load_json_model
from negotiation.registry._findings import AuditContext, Finding, cover
from negotiation.study import PilotRecord, SamplingRecord, SamplingUse, SelectionRecord, gate_passes

__all__ = ["check_pilot_gate", "check_provenance", "check_read_points", "check_sampling"]

RecordT = TypeVar("RecordT", bound=BaseModel)


def _fail(check: str, evidence: str) -> Finding:
    return Finding(check=check, status="fail", evidence=evidence)


def _records(ctx: AuditContext, check: str, model: type[RecordT], paths: list[Path]) -> Iterator[
        tuple[str, RecordT] | Finding]:
    """Load each record; yield a failing finding for unreadable ones or a name mismatch."""
    for path in paths:
        arm = path.parent.name if path.name in ("sampling.json", "selection.json") else path.stem
        try:
            record = load_json_model(model, path, root=ctx.root)
        except ConfigError as exc:
            yield from (_fail(check, line) for line in str(exc).splitlines())
            continue
        if record.arm != arm or record.study != ctx.study_name:
            yield _fail(check, f"{ctx.show(path)}:arm: record of {record.study}/{record.arm} stored as "
                               f"{ctx.study_name}/{arm}")
            continue
        yield arm, record


def _selection_paths(ctx: AuditContext) -> list[Path]:
    return ctx.layout.selections()


def _pilot_paths(ctx: AuditContext) -> list[Path]:
    return ctx.layout.pilots()


def _sampling_paths(ctx: AuditContext) -> list[Path]:
    return ctx.layout.samplings()


def check_provenance(ctx: AuditContext) -> Iterator[Finding]:
    if ctx.lock_hash is None:
        yield _fail("provenance", "cannot compare: the lock does not verify (see check lock)")
        return
    count, stale = 0, 0
    for model, paths in ((SelectionRecord, _selection_paths(ctx)), (PilotRecord, _pilot_paths(ctx)),
                         (SamplingRecord, _sampling_paths(ctx))):
        for path in paths:
            try:
                record = load_json_model(model, path, root=ctx.root)
            except ConfigError:
                continue  # reported by the check that owns the file
            count += 1
            if record.protocol_hash != ctx.lock_hash:
                stale += 1
                yield _fail("provenance", f"{ctx.show(path)}:protocol_hash: {record.protocol_hash[:12]} is not the "
                                          f"locked protocol's {ctx.lock_hash[:12]} (produced under another protocol)")
    if not stale:
        yield Finding(check="provenance", status="pass", evidence=f"{count} records carry the locked protocol hash")


def _selection_findings(ctx: AuditContext, arm_name: str, arm: Arm | None, rec: SelectionRecord,
                        where: str) -> Iterator[Finding]:
    """Hold a selection record to the arm's declared read: its entry's combined step, on the
    branch ``continuation_branches`` gives its run. A read past the declared step is never
    covered; a read below it needs a deviation the arm's entry does not already cite."""
    if arm is None or arm.kind != "trained":
        yield _fail("read_points", f"{where}:arm: {arm_name!r} is not a trained arm of the study")
        return
    if rec.run != arm.run:
        yield _fail("read_points", f"{where}:run: {rec.run!r}, but the arm reads run {arm.run!r}")
        return
    branch = ctx.branches().get(arm.run)
    if (branch is None) != (rec.parent_step is None):
        yield _fail("read_points", f"{where}:parent_step: {rec.parent_step!r} for an arm "
                                   f"{'with' if branch else 'without'} a parent run")
        return
    if branch is not None and rec.parent_step != branch.branch_step:
        yield _fail("read_points", f"{where}:parent_step: continuation branched at {rec.parent_step}, but "
                                   f"{arm.run} branches at {branch.branch_step} (registry continuations or the rule)")
        return
    want = ctx.study.read_step(arm) - (rec.parent_step or 0)
    cited = tuple(getattr(arm, "deviations", ()))
    if rec.rule_step != want:
        yield _fail("read_points", f"{where}:rule_step: {rec.rule_step}, but the arm's entry reads own step {want}")
    elif rec.step == want:
        yield Finding(check="read_points", status="pass", evidence=f"{arm_name}: read step {rec.step} (combined "
                                                                    f"{rec.combined_step}) as its entry says")
    elif rec.step > want:
        yield _fail("read_points", f"{where}:step: {rec.step} read past the entry's step {want} (combined "
                                   f"{ctx.study.read_step(arm)})")
    elif want in rec.available_steps:
        yield cover(ctx, "read_points", arm_name, ("read_point",),
                    f"{where}:step: {rec.step} chosen although the entry's step {want} exists", exclude=cited)
    else:
        yield cover(ctx, "read_points", arm_name, ("checkpoint_substitution", "read_point"),
                    f"{where}:step: {rec.step} substitutes for missing step {want}", exclude=cited)


def check_read_points(ctx: AuditContext) -> Iterator[Finding]:
    planned = ctx.planned_arms()
    for item in _records(ctx, "read_points", SelectionRecord, _selection_paths(ctx)):
        if isinstance(item, Finding):
            yield item
            continue
        arm_name, rec = item
        where = ctx.show(ctx.layout.selection(arm_name))
        yield from _selection_findings(ctx, arm_name, planned.get(arm_name), rec, where)


def check_pilot_gate(ctx: AuditContext) -> Iterator[Finding]:
    gate = ctx.study.protocol.pilot_gate
    buyers = ctx.study.protocol.buyers.evaluation
    for item in _records(ctx, "pilot_gate", PilotRecord, _pilot_paths(ctx)):
        if isinstance(item, Finding):
            yield item
            continue
        arm, rec = item
        where = ctx.show(ctx.layout.pilot(arm))
        cells = {cell.buyer: (i, cell) for i, cell in enumerate(rec.cells)}
        for name in sorted(set(cells) - set(buyers)):
            yield _fail("pilot_gate", f"{where}:cells.{cells[name][0]}.buyer: {name!r} is not an evaluation buyer")
        for buyer in buyers:
            if buyer not in cells:
                yield _fail("pilot_gate", f"{where}:cells: no cell for buyer {buyer!r}")
                continue
            i, cell = cells[buyer]
            ok = gate_passes(episodes=cell.episodes, bad_parses=cell.bad_parses, error_rows=0,
                             episodes_per_cell=gate.episodes_per_cell, max_bad_parses=gate.max_bad_parses)
            key = f"{where}:cells.{i}"
            if cell.passed != ok:
                yield _fail("pilot_gate", f"{key}.passed: {cell.passed}, but {cell.bad_parses} bad parses over "
                                          f"{cell.episodes} episodes {'passes' if ok else 'fails'} the gate")
            elif ok:
                yield Finding(check="pilot_gate", status="pass",
                              evidence=f"{arm} x {buyer}: {cell.bad_parses} bad parses in {cell.turns} turns")
            else:
                yield cover(ctx, "pilot_gate", arm, ("gate_override",),
                            f"{key}.bad_parses: {cell.bad_parses} in {cell.turns} turns over {cell.episodes} episodes "
                            f"(gate: at most {gate.max_bad_parses} over {gate.episodes_per_cell})", buyer=buyer)


def _differences(used: SamplingSettings, want: SamplingSettings) -> list[str]:
    return [f"{key}={getattr(used, key)!r} (protocol {getattr(want, key)!r})"
            for key in SamplingSettings.model_fields if getattr(used, key) != getattr(want, key)]


def _sampling_cover(ctx: AuditContext, arm: str, buyer: str | None, evidence: str) -> Finding:
    """Sampling drift is covered by a ``sampling_change`` entry covering the arm (for a buyer's
    drift, that buyer's cell), or by a ``harness_change`` entry that names the arm itself: a broad
    ``all_arms`` harness entry does not excuse one arm's decoding."""
    log = ctx.registry.deviations
    ids = log.covering(arm, ("sampling_change",), buyer=buyer)
    ids += [i for i in log.covering(arm, ("harness_change",), buyer=buyer) if not log.entries[i].all_arms]
    if ids:
        return Finding(check="sampling", status="covered", evidence=evidence, deviations=tuple(sorted(ids)))
    return Finding(check="sampling", status="fail", evidence=f"{evidence}; no active sampling_change entry, or "
                   "harness_change entry naming the arm, covers it")


def _use_diffs(key: str, use: SamplingUse, want: SamplingSettings) -> list[tuple[str, str]]:
    """Differences of what was sent and of what the provider accepted (as recorded from its
    responses: sent minus rejected) from the protocol's settings."""
    diffs = [(f"{key}.requested", d) for d in _differences(use.requested, want)]
    if use.accepted is not None:
        diffs += [(f"{key}.accepted", d) for d in _differences(use.accepted, want)]
    return diffs


def check_sampling(ctx: AuditContext) -> Iterator[Finding]:
    sampling, planned = ctx.study.protocol.sampling, ctx.planned_arms()
    buyers = ctx.study.protocol.buyers.evaluation
    for item in _records(ctx, "sampling", SamplingRecord, _sampling_paths(ctx)):
        if isinstance(item, Finding):
            yield item
            continue
        arm_name, rec = item
        where, arm = ctx.show(ctx.layout.sampling(arm_name)), planned.get(arm_name)
        if arm is None:
            continue  # check "arms" reports an arm outside the matrix
        want = sampling.reference_seller if arm.kind == "reference" else sampling.self_served_seller
        diffs = [(None, key, d) for key, d in _use_diffs("seller", rec.seller, want)]
        if set(rec.buyers) != set(buyers):
            yield _fail("sampling", f"{where}:buyers: {sorted(rec.buyers)}, expected {sorted(buyers)}")
        for name, use in sorted(rec.buyers.items()):
            diffs += [(name, key, d) for key, d in _use_diffs(f"buyers.{name}", use, sampling.buyer)]
        if not diffs:
            yield Finding(check="sampling", status="pass", evidence=f"{arm_name}: seller and buyers sent and "
                                                                   "accepted as the protocol says")
        for buyer, key, diff in diffs:
            yield _sampling_cover(ctx, arm_name, buyer, f"{where}:{key}: {diff}")
