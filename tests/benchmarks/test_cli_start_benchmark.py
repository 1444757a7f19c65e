"""benchmarks/cli_start.py --small times each light command once and prints its table."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small

ROW = re.compile(r"^(?P<name>\S.*?)\s+(?P<wall>\d+\.\d+)\s+(?P<cpu>\d+\.\d+)\s+(?P<extra>[+-]\d+\.\d+)")


@pytest.mark.slow
def test_cli_start_benchmark_small_mode_prints_its_figures():
    out = run_small("cli_start.py").stdout
    rows = {m["name"]: float(m["wall"]) for m in map(ROW.match, out.splitlines()) if m}
    assert {"python -c pass", "nego --help", "nego parse", "nego score"} <= set(rows)
    assert all(wall > 0 for wall in rows.values()) and "cpu-bare" in out.splitlines()[0]
