"""benchmarks/grpo_step.py runs in its small mode (a tiny CPU run through the real trainer) and prints its figures."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_grpo_step_benchmark_small_mode_prints_its_figures(tmp_path):
    out = run_small("grpo_step.py", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "figures.json"),
                    timeout=900)
    figures = json.loads((tmp_path / "figures.json").read_text())["sizes"]["lm_xs"]["ours"]
    assert figures["step_s"] > 0 and figures["generated_tokens_per_step"] > 0 and "lm_xs ours" in out.stdout
