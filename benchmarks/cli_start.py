"""Start-up time of ``nego`` commands that need no torch, beside ``python -c pass``.

Each command runs ``--repeat`` times in a fresh interpreter; the median wall time and the
median CPU time (user + system of the child, robust to other work on a shared machine) are
printed with the CPU time above the bare interpreter's. With ``--against REV`` the same
commands also run from git revision ``REV`` (a temporary copy of its files), alternating
(ours, theirs, ours, ...) so that load from other processes hits both alike, and each row
shows both sides and the ratio ours / theirs of the CPU time above bare. Usage::

    python benchmarks/cli_start.py [--repeat 7] [--limit 0.5] [--all] [--against main] [--only scenario]
    python benchmarks/cli_start.py --small     # CI: one run of each light command, the limit not enforced

Exit status 1 when one of this checkout's light commands takes more than ``--limit`` seconds
of CPU above ``python -c pass`` (the issue's "starts in <= 0.5 s beside python -c pass"; on a
quiet machine the wall column reads the same figure for the whole command).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import checkout  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MESSAGE = b'Deal. {"action": "COUNTER", "terms": [{"name": "price", "value": 18000}]}'
NEGO = ["-m", "negotiation.cli"]
BARE = "python -c pass"
COMMANDS: dict[str, tuple[list[str], bytes]] = {
    BARE: (["-c", "pass"], b""),
    "nego --help": ([*NEGO, "--help"], b""),
    "nego --version": ([*NEGO, "--version"], b""),
    "nego parse": ([*NEGO, "parse"], MESSAGE),
    "nego domains": ([*NEGO, "domains"], b""),
    "nego scenario": ([*NEGO, "scenario", "used_car", "1"], b""),
    "nego score": ([*NEGO, "score", "used_car", "1", "--ledger", '{"price": 18000}'], b""),
    "nego play --help": ([*NEGO, "play", "--help"], b""),
    "nego evaluate --help": ([*NEGO, "evaluate", "--help"], b""),
}
"""Commands whose start-up is the whole cost: held to ``--limit``."""
WORKING: dict[str, tuple[list[str], bytes]] = {
    "nego protocol verify": ([*NEGO, "protocol", "verify", "demo"], b""),
    "nego audit": ([*NEGO, "audit", "demo", "--json"], b""),
    "nego pipeline plan": ([*NEGO, "pipeline", "plan", "demo", "--check"], b""),
    "nego play (scripted)": ([*NEGO, "play", "--seller", "scripted:boulware", "--buyer", "scripted:conceder",
                              "--domain", "used_car", "--seed", "1"], b""),
}
"""Commands that need no torch but do work (load and hash the study, play an episode): printed
with ``--all`` beside the others, not held to the limit."""


def timed(tree: Path, args: list[str], stdin: bytes) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one run of ``python args`` on the package in ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          cwd=tree, env={**os.environ, "PYTHONPATH": str(tree), "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:  # --help of a command some revision lacks: no figure rather than a wrong one
        return float("nan"), float("nan")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(trees: dict[str, Path], commands: dict, repeat: int) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(side, command): (median wall, median CPU)}``, the sides alternating run by run."""
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name, (cmd, stdin) in commands.items():
        for tree in trees.values():
            timed(tree, cmd, stdin)  # warm the file cache and byte-code
        for _ in range(repeat):
            for side, tree in trees.items():
                runs.setdefault((side, name), []).append(timed(tree, cmd, stdin))
    return {key: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for key, r in runs.items()}


def report(results: dict, sides: list[str], commands: dict, limit: float) -> bool:
    """Print the table; whether one of our light commands is over ``limit``."""
    head = f"{'command':22}" + "".join(f" {side[:10] + ' wall':>16} {'cpu':>7} {'cpu-bare':>9}" for side in sides)
    print(head + (f" {'ratio':>7}" if len(sides) > 1 else ""))
    failed = False
    for name in commands:
        row = f"{name:22}"
        extra = {}
        for side in sides:
            wall, cpu = results[side, name]
            extra[side] = cpu - results[side, BARE][1]
            row += f" {wall:16.3f} {cpu:7.3f} {extra[side]:+9.3f}"
        if len(sides) > 1 and name != BARE:
            row += f" {extra[sides[0]] / extra[sides[1]]:7.2f}"
        over = name in COMMANDS and name != BARE and not extra[sides[0]] <= limit
        failed |= over
        print(row + ("  over the limit" if over else "  (does work)" if name in WORKING else ""))
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--limit", type=float, default=0.5, help="seconds of CPU allowed above python -c pass")
    parser.add_argument("--all", action="store_true", help="also time the commands that do work")
    parser.add_argument("--against", metavar="REV", help="git revision to time beside this checkout")
    parser.add_argument("--only", action="append", metavar="TEXT",
                        help="time only the commands whose name contains TEXT (repeatable; the bare run always)")
    parser.add_argument("--small", action="store_true", help="CI: --repeat 1, the limit reported but not enforced")
    args = parser.parse_args(argv)
    if args.small:
        args.repeat = 1
    commands = {name: c for name, c in {**COMMANDS, **WORKING}.items()
                if name == BARE or (any(t in name for t in args.only) if args.only else args.all or name in COMMANDS)}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"ours": REPO}
        if args.against:
            trees[args.against] = checkout(args.against, Path(tmp))
        results = measure(trees, commands, args.repeat)
    over = report(results, list(trees), commands, args.limit)
    return 1 if over and not args.small else 0  # one run on a loaded CI machine says nothing about a limit


if __name__ == "__main__":
    sys.exit(main())
