"""benchmarks/grpo_step.py runs in its small mode (a tiny CPU run through the real trainer) and prints its figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_grpo_step_benchmark_small_mode_prints_its_figures(tmp_path):
    out = subprocess.run([sys.executable, "benchmarks/grpo_step.py", "--small", "--work", str(tmp_path / "work"),
                          "--out", str(tmp_path / "figures.json")], cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads((tmp_path / "figures.json").read_text())["sizes"]["lm_xs"]["ours"]
    assert figures["step_s"] > 0 and figures["generated_tokens_per_step"] > 0 and "lm_xs ours" in out.stdout
