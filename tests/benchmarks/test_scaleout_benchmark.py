"""benchmarks/scaleout.py --small runs the ray backend at 1 and 2 workers beside the local reference."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small

pytest.importorskip("ray")


@pytest.mark.slow
def test_scaleout_benchmark_small_mode_prints_its_figures():
    out = run_small("scaleout.py").stdout
    rows = {m[1]: int(m[2]) for m in re.finditer(r"^\s*(local \(reference\)|ray, \d workers)\s+(\d+)", out, re.M)}
    assert rows == {"local (reference)": 36, "ray, 1 workers": 36, "ray, 2 workers": 36}, out
