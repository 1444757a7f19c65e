"""benchmarks/analysis.py runs in its small mode and prints its figures (so it cannot break unnoticed)."""

from __future__ import annotations

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_analysis_benchmark_small_mode_prints_its_figures():
    out = run_small("analysis.py").stdout
    assert "ratio scipy/ours" in out and "run_analysis:" in out
    assert " 0 contrasts" not in out and "success=True" in out
