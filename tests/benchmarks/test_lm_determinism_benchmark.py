"""benchmarks/lm_determinism.py --small repeats one lm_xs step and a few generations on the CPU, where
both repeat bit for bit (the GPU run measures what repeats there)."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_lm_determinism_small_mode_repeats_exactly_on_the_cpu(tmp_path):
    run_small("lm_determinism.py", "--results", str(tmp_path), timeout=300)
    report = json.loads((tmp_path / "determinism.json").read_text())
    assert report["device"] == "cpu" and report["size"] == "lm_xs" and report["steps"] == 1
    assert report["curves_identical"] and all(report["curves_identical"].values())
    assert report["checkpoints_identical"] and report["generation_identical"]
    assert report["generation_logprobs_identical"]
