"""benchmarks/stages.py --small runs the light stage processes once here and once from HEAD, side by side."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_stages_benchmark_small_mode_prints_its_figures():
    out = run_small("stages.py").stdout
    rows = re.findall(r"^(\w+)\s+ours\s+(\d+\.\d+) s\s+HEAD\s+(\d+\.\d+) s\s+ratio\s+(\d+\.\d+)", out, re.M)
    assert [r[0] for r in rows] == ["scenarios", "select", "pilot"] and all(float(r[1]) > 0 for r in rows)
