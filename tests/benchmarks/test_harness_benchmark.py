"""benchmarks/harness.py --small plays one seed per domain over HTTP against the stand-in, beside raw httpx."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_harness_benchmark_small_mode_prints_its_figures():
    out = run_small("harness.py").stdout
    rates = {m[1]: float(m[2]) for m in re.finditer(r"^(harness|raw httpx)\s*:\s+(\d+\.\d) turns/s", out, re.M)}
    assert set(rates) == {"harness", "raw httpx"} and min(rates.values()) > 0
    assert re.search(r"^ratio\s*: \d+\.\d\dx", out, re.M)
