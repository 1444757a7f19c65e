"""DVC's own cost per stage as a pipeline grows, in today's layout and a per-arm layout (issue 30).

Builds synthetic DVC projects (git + DVC, in a temporary folder) shaped like the study plan: one
``scenarios`` stage, per arm a chain ``train -> select -> pilot -> evaluate``, then ``analyze``
(reading every arm's evaluate output), ``report`` and ``audit``. Every stage does trivial shell
work (a few ms), has the same code deps (``--deps`` small files) and reads params, so what a run
costs is DVC's bookkeeping. Layouts:

- ``today``: one ``dvc.yaml`` with ``foreach`` stages over the arms, hence one ``dvc.lock``;
- ``perarm``: ``arms/<arm>/dvc.yaml`` holding that arm's four stages (so one small lock each),
  the study-level stages in the root ``dvc.yaml``; every arm's params in the root ``params.yaml``;
- ``perarm_params``: the same with each arm's params in ``arms/<arm>/params.yaml`` (DVC parses a
  stage's params file whole, with pure-Python YAML construction, more than once per stage).

A clean run past ``--timeout`` is stopped; its total is extrapolated from the stages it finished
(a linear fit of the gap against the stage's rank), marked ``~``, and the project is finished
without DVC (``prefill``) so that the no-op and status runs are still timed. For each layout and
size it prints the clean ``dvc repro`` time, the seconds to its first stage, its per-stage
overhead (the rest over the other stages; early and late: the mean gap between the stages'
finishing times over the first and the last tenth, from the outputs' mtimes), the no-op ``dvc
repro`` (the second of two) and ``dvc status`` times, then the layouts side by side::

    python benchmarks/dvc_scale.py                       # 80, 320, 1280 stages, both layouts
    python benchmarks/dvc_scale.py --sizes 80 320 --layouts today --timeout 600
    python benchmarks/dvc_scale.py --small               # CI: 8 and 16 stages (seconds)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _dvc_projects import ENV, LAYOUTS, build, prefill  # noqa: E402


@dataclass
class Result:
    layout: str
    stages: int
    clean: float  # seconds; extrapolated when ``done < stages``
    done: int
    startup: float  # from the command's start to the first stage's output
    early: float  # mean gap between finishing stages, first tenth
    late: float  # the same, last tenth of the stages finished
    noop: float | None
    status: float | None

    @property
    def per_stage(self) -> float:
        """DVC's seconds a stage beyond the command's start-up (the stages' work is a few ms)."""
        return (self.clean - self.startup) / (self.stages - 1)


def timed(command: list[str], root: Path, timeout: float | None = None) -> tuple[float, str | None]:
    """Wall seconds of ``command`` in ``root`` and its output (None: stopped at ``timeout``)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=root, env=ENV, check=True, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        (root / ".dvc/tmp/rwlock").unlink(missing_ok=True)  # DVC's stage lock file, maybe cut mid-write
        return time.perf_counter() - start, None
    except subprocess.CalledProcessError as error:
        raise SystemExit(f"{' '.join(command)} failed in {root}:\n{error.stdout[-2000:]}\n{error.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def finish_gaps(root: Path, start: float) -> list[float]:
    """Seconds between consecutive stages' finishing times (their outputs' mtimes), the first from ``start``."""
    times = sorted(path.stat().st_mtime for path in (root / "outputs").rglob("*.txt"))
    return [b - a for a, b in zip([start, *times], times)]


def extrapolate(gaps: list[float], stages: int) -> float:
    """Total seconds for ``stages`` stages from a linear fit of gap against rank over those finished."""
    n = len(gaps)
    if n < 2:
        return float("nan")
    mean_x, mean_y = (n - 1) / 2, sum(gaps) / n
    slope = sum((i - mean_x) * (g - mean_y) for i, g in enumerate(gaps)) / sum((i - mean_x) ** 2 for i in range(n))
    return sum(mean_y + slope * (i - mean_x) for i in range(stages))


def measure(layout: str, stages: int, deps: int, timeout: float, keep: Path | None) -> Result:
    root = Path(tempfile.mkdtemp(prefix=f"dvc-scale-{layout}-{stages}-", dir=keep))
    try:
        plan = build(root, layout, stages, deps)
        stages = len(plan)
        wall_start = time.time()
        clean, output = timed(["dvc", "repro"], root, timeout)
        startup, *gaps = finish_gaps(root, wall_start)
        tenth = max(1, len(gaps) // 10)
        early, late = sum(gaps[:tenth]) / tenth, sum(gaps[-tenth:]) / tenth
        total = clean if output is not None else startup + extrapolate(gaps, stages - 1)
        if output is None:
            prefill(root, plan)
        timed(["dvc", "repro"], root)  # the first no-op hashes what prefill wrote into DVC's state
        noop, again = timed(["dvc", "repro"], root)
        if "Running stage" in again:
            raise SystemExit(f"the no-op dvc repro in {root} ran stages:\n{again[-2000:]}")
        status, report = timed(["dvc", "status"], root)
        if "up to date" not in report:
            raise SystemExit(f"dvc status in {root} after dvc repro is not clean:\n{report[-2000:]}")
        return Result(layout, stages, total, len(gaps) + 1, startup, early, late, noop, status)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def fmt(value: float | None, unit: str = "s", scale: float = 1.0) -> str:
    return "-" if value is None else f"{value * scale:.2f} {unit}" if scale == 1.0 else f"{value * scale:.0f} {unit}"


def print_result(r: Result) -> None:
    mark = "" if r.done == r.stages else "~"
    noop_per = None if r.noop is None else r.noop / r.stages
    print(f"{r.layout:<13} {r.stages:>5} stages  clean {mark}{r.clean:8.1f} s  start {r.startup:.2f} s"
          f"  per-stage {mark}{r.per_stage:.3f} s"
          f"  early {r.early:.3f} s  late {r.late:.3f} s  no-op {fmt(r.noop)} ({fmt(noop_per, 'ms', 1000)}/stage)"
          f"  status {fmt(r.status)}" + ("" if not mark else f"  [stopped after {r.done} stages]"), flush=True)


def print_comparison(results: list[Result]) -> None:
    by = {(r.layout, r.stages): r for r in results}
    sizes = sorted({r.stages for r in results})
    print("\nside by side (today / new layout: >1 means the new layout is faster)")
    for n, new in ((n, new) for n in sizes for new in LAYOUTS[1:]):
        a, b = by.get(("today", n)), by.get((new, n))
        if a and b:
            noop = "-" if a.noop is None or b.noop is None else f"{a.noop / b.noop:.2f}x"
            status = "-" if a.status is None or b.status is None else f"{a.status / b.status:.2f}x"
            print(f"{n:>5} stages  {new:<13} per-stage {a.per_stage:.3f} / {b.per_stage:.3f} s = {a.per_stage / b.per_stage:.2f}x"
                  f"  late gap {a.late / b.late:.2f}x  no-op {noop}  status {status}")
    print("\ngrowth from the smallest to the largest size (flat: within 1.5x)")
    for layout in LAYOUTS:
        runs = [by[(layout, n)] for n in sizes if (layout, n) in by]
        if len(runs) > 1:
            first, last = runs[0], runs[-1]
            noop = "-" if first.noop is None or last.noop is None else \
                f"{(last.noop / last.stages) / (first.noop / first.stages):.2f}x"
            print(f"{layout:<13} {first.stages} -> {last.stages} stages  per-stage {last.per_stage / first.per_stage:.2f}x"
                  f"  late gap {last.late / first.late:.2f}x  no-op per stage {noop}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="8 and 16 stages (CI)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[80, 320, 1280])
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--deps", type=int, default=12, help="code deps per stage (the demo's: 10-30)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds before a clean run is stopped")
    parser.add_argument("--keep", type=Path, help="build the projects under this folder and keep them")
    args = parser.parse_args(argv)
    sizes = [8, 16] if args.small else args.sizes
    print(f"dvc_scale: sizes {sizes}, layouts {args.layouts}, {args.deps} code deps a stage, "
          f"{os.cpu_count()} cores", flush=True)
    results = []
    for size in sizes:
        for layout in args.layouts:
            results.append(measure(layout, size, args.deps, args.timeout, args.keep))
            print_result(results[-1])
    print_comparison(results)


if __name__ == "__main__":
    main()
