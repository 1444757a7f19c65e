"""Start-up time of ``nego`` commands that need no torch, beside ``python -c pass``.

Each command runs ``--repeat`` times in a fresh interpreter; the median wall time and the
median CPU time (user + system of the child, robust to other work on a shared machine) are
printed with the difference to the bare interpreter. Usage::

    python benchmarks/cli_start.py [--repeat 7] [--limit 0.5] [--all]

Exit status 1 when a command's median CPU time exceeds the bare interpreter's by more than
``--limit`` seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

MESSAGE = b'Deal. {"action": "COUNTER", "terms": [{"name": "price", "value": 18000}]}'
NEGO = ["-m", "negotiation.cli"]
COMMANDS: dict[str, tuple[list[str], bytes]] = {
    "python -c pass": (["-c", "pass"], b""),
    "nego --help": ([*NEGO, "--help"], b""),
    "nego --version": ([*NEGO, "--version"], b""),
    "nego parse": ([*NEGO, "parse"], MESSAGE),
    "nego domains": ([*NEGO, "domains"], b""),
    "nego scenario": ([*NEGO, "scenario", "used_car", "1"], b""),
    "nego score": ([*NEGO, "score", "used_car", "1", "--ledger", '{"price": 18000}'], b""),
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


def timed(args: list[str], stdin: bytes) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one run of ``python args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], input=stdin, stdout=subprocess.DEVNULL, check=True,
                   env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--limit", type=float, default=0.5, help="seconds of CPU allowed above python -c pass")
    parser.add_argument("--all", action="store_true", help="also time the commands that do work")
    args = parser.parse_args(argv)
    results = {}
    for name, (cmd, stdin) in {**COMMANDS, **(WORKING if args.all else {})}.items():
        timed(cmd, stdin)  # warm the file cache and byte-code
        runs = [timed(cmd, stdin) for _ in range(args.repeat)]
        results[name] = (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
    base_wall, base_cpu = results["python -c pass"]
    failed = False
    print(f"{'command':22} {'wall s':>8} {'cpu s':>8} {'cpu - bare':>11}")
    for name, (wall, cpu) in results.items():
        extra = cpu - base_cpu
        over = name in COMMANDS and name != "python -c pass" and extra > args.limit
        failed |= over
        note = "  over the limit" if over else ("  (does work)" if name in WORKING else "")
        print(f"{name:22} {wall:8.3f} {cpu:8.3f} {extra:+11.3f}{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
