"""benchmarks/anac.py --small plays an ANAC buyer and a scripted buyer for two episodes each and prints
both rates, with no error row."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_anac_benchmark_small_mode_prints_its_figures():
    pytest.importorskip("negmas_genius_agents")
    out = run_small("anac.py").stdout
    rates = re.findall(r"^(\S+)\s+(\d+\.\d+) episodes/s \((\d+) episodes, \d+ deals, 0 error rows\)$", out, re.M)
    assert [spec for spec, _, _ in rates] == ["scripted:titfortat", "negmas:AgentK?levels=2"]
    assert all(float(rate) > 0 and int(n) == 2 for _, rate, n in rates)
    assert "1 of 1 ANAC agents played every episode without an error row" in out
