"""benchmarks/engine.py --small plays scripted episodes for a moment and prints the rate (NegMAS's beside it
when the bench extra is installed)."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_engine_benchmark_small_mode_prints_its_figures():
    out = run_small("engine.py").stdout
    rate = re.search(r"ours .*?(\d+\.\d) episodes/s \((\d+) episodes", out)
    assert rate and float(rate[1]) > 0 and int(rate[2]) >= 3
    assert "ratio ours/negmas" in out or "negmas SAO: not installed" in out
