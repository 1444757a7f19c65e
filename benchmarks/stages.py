"""Start-up and run CPU time of the light DVC stage processes, beside those of another revision.

The demo's ``dvc repro`` starts about eighty stage processes; most do seconds of work, so what
each imports is much of what it costs. This runs ``scenarios`` and the ``select`` and ``pilot``
of ``pipelines/demo/arms/ref_boulware/dvc.yaml`` (a scripted arm: no training, no API) as DVC runs them, from this
checkout and from git revision ``REV``, alternating (ours, theirs, ours, ...) so that load from
other processes hits both alike, and prints per stage the median CPU time, the ratio, and the
heavy libraries each process imported::

    python benchmarks/stages.py --against main [--rounds 3]
    python benchmarks/stages.py --small         # CI: one round against HEAD (the committed tree)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import checkout  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "mlflow", "great_expectations", "numba", "dvc", "litellm", "transformers", "matplotlib",
         "pandas", "httpx", "typer")
PROBE = """
import atexit, json, runpy, sys
atexit.register(lambda: print("IMPORTED " + json.dumps(sorted(h for h in {heavy!r} if h in sys.modules)),
                              file=sys.stderr))
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def stages(out: Path) -> list[tuple[str, list[str]]]:
    arm = ["--study", "demo", "--arm", "ref_boulware", "--results", str(out)]
    return [("scenarios", ["scenarios.py", "--study", "demo", "--out", str(out / "scenarios")]),
            ("select", ["select_arm.py", *arm]),
            ("pilot", ["pilot.py", *arm, "--concurrency", "8"])]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_stage(tree: Path, argv: list[str], cwd: Path) -> tuple[float, list[str]]:
    """CPU seconds (user + system) of one stage process and the heavy libraries it imported; CPU
    time, unlike wall time, hardly moves with other load on the machine."""
    script = [str(tree / "pipelines" / argv[0]), *argv[1:]]
    env = {**os.environ, "PYTHONPATH": str(tree), "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    start = _children_cpu()
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=script)], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    seconds = _children_cpu() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} in {tree} failed:\n{done.stderr[-2000:]}")
    line = [x for x in done.stderr.splitlines() if x.startswith("IMPORTED ")][-1]
    return seconds, json.loads(line.removeprefix("IMPORTED "))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="git revision to compare with (required but with --small)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="CI: one round; --against defaults to HEAD")
    args = parser.parse_args(argv)
    if args.small:
        args.rounds, args.against = 1, args.against or "HEAD"
    if not args.against:
        parser.error("--against REV is required")
    times: dict[tuple[str, str], list[float]] = {}
    imported: dict[tuple[str, str], list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"ours": REPO, args.against: checkout(args.against, Path(tmp))}
        for i in range(args.rounds):
            for side, tree in trees.items():
                work = Path(tmp) / f"{side.replace('/', '_')}-{i}"
                work.mkdir()
                for name, stage_argv in stages(work / "outputs" / "demo"):
                    seconds, heavy = run_stage(tree, stage_argv, work)
                    times.setdefault((side, name), []).append(seconds)
                    imported[(side, name)] = heavy
    start = _children_cpu()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = _children_cpu() - start
    print(f"stage processes of the demo's scripted arm ref_boulware: median CPU seconds of {args.rounds} "
          f"alternating rounds (python -c pass: {bare:.2f} s)")
    for name, _ in stages(Path(".")):
        ours, theirs = statistics.median(times[("ours", name)]), statistics.median(times[(args.against, name)])
        print(f"{name:10s} ours {ours:6.2f} s  {args.against} {theirs:6.2f} s  ratio {ours / theirs:5.2f}   "
              f"ours imports: {', '.join(imported[('ours', name)]) or '-'}   "
              f"{args.against}: {', '.join(imported[(args.against, name)]) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
