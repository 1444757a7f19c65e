"""benchmarks/dvc_scale.py --small: synthetic DVC plans of 8 and 16 stages in today's one-file layout
and in the two per-arm layouts, each run clean, no-op and status-checked, with the figures printed."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_dvc_scale_benchmark_small_mode_prints_its_figures():
    out = run_small("dvc_scale.py").stdout
    rows = re.findall(r"^(today|perarm|perarm_params)\s+(\d+) stages\s+clean\s+(\d+\.\d) s.*no-op (\d+\.\d\d) s", out, re.M)
    assert sorted((layout, int(n)) for layout, n, *_ in rows) == [
        ("perarm", 8), ("perarm", 16), ("perarm_params", 8), ("perarm_params", 16), ("today", 8), ("today", 16)], out
    assert all(float(clean) > 0 and float(noop) > 0 for *_, clean, noop in rows), out
    assert re.search(r"^\s+16 stages\s+perarm_params\s+per-stage .* = \d+\.\d\dx", out, re.M), out
    assert re.search(r"^perarm_params\s+8 -> 16 stages\s+per-stage \d+\.\d\dx", out, re.M), out
