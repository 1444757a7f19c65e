"""benchmarks/analysis.py runs in its small mode and prints its figures (so it cannot break unnoticed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_analysis_benchmark_small_mode_prints_its_figures():
    out = subprocess.run([sys.executable, "benchmarks/analysis.py", "--small"], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ratio scipy/ours" in out.stdout and "run_analysis:" in out.stdout
    assert " 0 contrasts" not in out.stdout and "success=True" in out.stdout
