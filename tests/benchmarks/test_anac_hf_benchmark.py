"""benchmarks/anac.py --small against an ``hf:`` seller (the tiny lm_xs checkpoint of the test session):
the ANAC buyer and the scripted buyer each play two episodes against the language model, batched
through the evaluation harness's cell runner, with no error row."""

from __future__ import annotations

import json
import re

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_anac_benchmark_small_mode_plays_an_hf_seller(tiny_lm, tmp_path):
    pytest.importorskip("negmas_genius_agents")
    pytest.importorskip("transformers")
    figures = tmp_path / "figures.json"
    out = run_small("anac.py", "--seller", f"hf:{tiny_lm}?max_tokens=24", "--study", "lm",
                    "--json", str(figures)).stdout
    rates = re.findall(r"^(\S+)\s+(\d+\.\d+) episodes/s \((\d+) episodes, \d+ deals, 0 error rows\)$", out, re.M)
    assert [spec for spec, _, _ in rates] == ["scripted:titfortat", "negmas:AgentK?levels=2"]
    assert all(float(rate) > 0 and int(n) == 2 for _, rate, n in rates)
    assert "1 of 1 ANAC agents played every episode without an error row against hf:" in out
    written = json.loads(figures.read_text())
    assert written["study"] == "lm" and [b["episodes"] for b in written["buyers"]] == [2, 2]
