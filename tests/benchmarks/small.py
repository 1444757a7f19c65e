"""Running a benchmark script in its small mode, as CI's slow suite does: one fresh process from the
repository root, the checkout first on ``PYTHONPATH`` (so the script runs this tree's package)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


def run_small(script: str, *args: str, timeout: float = 300, cwd: Path = REPO,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``benchmarks/<script> --small *args``, asserted to exit 0; its completed process (stdout, stderr)."""
    path = BENCHMARKS / script
    command = ["bash", str(path)] if path.suffix == ".sh" else [sys.executable, str(path)]
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    bindir = str(Path(sys.executable).parent)  # dvc, nego and python of this environment first
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PATH": bindir + os.pathsep + os.environ["PATH"],
               **(env or {})}
    done = subprocess.run([*command, "--small", *args], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{script} --small exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done
