"""The GPU profile's stages in two lanes on one machine: training beside evaluation.

Generation at these sizes is launch-bound, so one process leaves most of the GPU idle; a training
run and an evaluation interleave on it. ``run_lanes`` runs the chosen stages before ``train``
(scenarios, tokenizer, init) in order, then the ``train@`` stages one after another (a run's
parent before it, as ``stage_commands`` orders them) in one lane, and in the other each arm's
``select``, ``pilot`` and ``evaluate`` as soon as the training stages of its arm file are in the
ledger: base arms at once, trained arms in the order their runs finish. Each stage is still one
``run_offline`` call (same commands, ledger, lock and resume), so a call cut short is followed by
the same call. Memory is the caller's to mind (docs/pipeline.md, "GPU stages").
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from negotiation.pipeline._offline import STAGE_ORDER, StageCommand, _chosen, _read_ledger, ledger_path, \
    run_offline, stage_commands

__all__ = ["lane_plan", "run_lanes"]

POLL_S = 0.5  # how often the evaluation lane re-reads the ledger for a finished run


def lane_plan(commands: list[StageCommand], chosen: list[StageCommand]) -> tuple[
        list[str], list[str], list[tuple[str, list[str], list[str]]]]:
    """Split ``chosen`` (a subset of ``commands``, in their order) into the lanes.

    Returns:
        ``(before, training, arms)``: stage names run first in order; ``train@`` names of the
        training lane; per arm with evaluation stages chosen, ``(arm, its stage names, the train@
        names of its arm file it waits for)``, base arms first, then by their last run's place in
        the training lane.
    """
    train_rank = STAGE_ORDER.index("train")
    before = [c.name for c in chosen if STAGE_ORDER.index(c.group) < train_rank]
    training = [c.name for c in chosen if c.group == "train"]
    arms: dict[str, list[str]] = {}
    for c in chosen:
        if STAGE_ORDER.index(c.group) > train_rank and c.arm:
            arms.setdefault(c.arm, []).append(c.name)
    waits = {arm: [c.name for c in commands if c.group == "train" and c.arm == arm] for arm in arms}
    order = [c.name for c in commands if c.group == "train"]
    rank = {arm: max((order.index(n) for n in waits[arm]), default=-1) for arm in arms}
    return before, training, [(arm, arms[arm], waits[arm]) for arm in sorted(arms, key=lambda a: rank[a])]


def run_lanes(pipeline_file: str | Path, root: Path, *, groups: tuple[str, ...], patterns: tuple[str, ...] = (),
              dry: bool = False) -> list[str]:
    """Run the chosen stages not yet in the ledger in two lanes (module docstring); return the names
    run (or, ``dry``, the lanes it would run, printed). A failing stage stops its lane; an arm whose
    training never reaches the ledger is not evaluated; either ends the call with an error naming it."""
    pipeline_file, root = Path(pipeline_file), Path(root)
    commands = stage_commands(pipeline_file)
    ledger_file = ledger_path(pipeline_file, root)
    finished = _read_ledger(ledger_file)
    chosen = [c for c in _chosen(commands, groups, patterns) if c.name not in finished]
    before, training, arms = lane_plan(commands, chosen)
    if dry:
        _print_plan(before, training, arms)
        return before + training + [n for _, names, _ in arms for n in names]
    ran = _run_named(pipeline_file, root, groups, before)
    failures: list[str] = []

    def train_lane() -> None:
        try:
            ran.extend(_run_named(pipeline_file, root, groups, training))
        except SystemExit as stop:  # a failed run: its arms are skipped below, the call fails at the end
            failures.append(str(stop))

    lane = threading.Thread(target=train_lane, name="training lane")
    lane.start()
    for arm, names, waits in arms:
        while not set(waits) <= set(_read_ledger(ledger_file)) and lane.is_alive():
            time.sleep(POLL_S)
        missing = sorted(set(waits) - set(_read_ledger(ledger_file)))
        if missing:
            failures.append(f"error: arm {arm} not evaluated: {', '.join(missing)} not in {ledger_file}")
            continue
        try:
            ran.extend(_run_named(pipeline_file, root, groups, names))
        except SystemExit as stop:
            failures.append(str(stop))
    lane.join()
    if failures:
        raise SystemExit("\n".join(failures))
    return ran


def _run_named(pipeline_file: Path, root: Path, groups: tuple[str, ...], names: list[str]) -> list[str]:
    """``run_offline`` of exactly these stages (none: nothing, where no patterns would mean all)."""
    return run_offline(pipeline_file, root, groups=groups, patterns=tuple(names)) if names else []


def _print_plan(before: list[str], training: list[str], arms: list[tuple[str, list[str], list[str]]]) -> None:
    print(f"first, in order: {', '.join(before) or '-'}", file=sys.stderr)
    print(f"training lane: {', '.join(training) or '-'}", file=sys.stderr)
    for arm, names, waits in arms:
        print(f"evaluation lane: {', '.join(names)}" + (f" (after {', '.join(waits)})" if waits else ""),
              file=sys.stderr)
