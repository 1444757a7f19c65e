"""benchmarks/pipeline.sh --small: a clean then a no-op dvc repro of one scripted arm's stages in a
throwaway clone, with the report of where the time goes (.ci/run runs the full script on the demo)."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_pipeline_benchmark_small_mode_prints_its_figures():
    out = run_small("pipeline.sh").stdout
    assert re.search(r"^clean dvc repro :\s+\d+\.\d s for 6 stages$", out, re.M), out
    assert re.search(r"^no-op dvc repro :\s+\d+\.\d s, 0 stages rerun$", out, re.M), out
    assert re.search(r"^dvc checks      : \d+ deps and \d+ outs of \d+ stages$", out, re.M), out
    kinds = re.findall(r"^(scenarios|select|pilot)\s+1\s+\d+\.\d", out, re.M)
    assert sorted(kinds) == ["pilot", "scenarios", "select"] and "dvc between stages" in out
    assert re.search(r"^code\s+3\s+\d+\.\d", out, re.M), out  # the three kinds' code stages
