"""benchmarks/fuzz.py --small fuzzes a few thousand messages through parse, ledger, score and tables."""

from __future__ import annotations

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_fuzz_benchmark_small_mode_prints_its_figures():
    out = run_small("fuzz.py").stdout
    assert "3,000 messages" in out and "messages/s wall" in out and "worst per KB" in out
    assert "exceptions: 0" in out
