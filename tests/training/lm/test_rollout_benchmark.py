"""``benchmarks/rollout.py --small`` runs end to end, so the lead's GPU benchmark never breaks unnoticed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "rollout.py"


@pytest.mark.slow
def test_small_rollout_benchmark_reports_both_paths_with_equal_tokens(tmp_path):
    spec = importlib.util.spec_from_file_location("rollout_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--small", "--out", str(tmp_path / "rollout.json")])
    for path in ("engine", "reference"):
        row = out[path]
        assert row["gen_tokens"] > 0 and row["seconds"] > 0 and row["decode_steps"] > 0
        assert 0 < row["live_share"] <= 1
    assert out["engine"]["gen_tokens"] == out["reference"]["gen_tokens"]
    assert out["same_tokens"] and (tmp_path / "rollout.json").is_file()
