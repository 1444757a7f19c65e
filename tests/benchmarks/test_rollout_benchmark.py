"""benchmarks/rollout.py --small runs end to end on the CPU, so the GPU benchmark never breaks unnoticed."""

from __future__ import annotations

import importlib.util
import json
import warnings

import pytest

from tests.benchmarks.small import BENCHMARKS, run_small


@pytest.mark.slow
def test_rollout_benchmark_small_mode_reports_both_paths_with_equal_tokens(tmp_path):
    run_small("rollout.py", "--out", str(tmp_path / "rollout.json"))
    out = json.loads((tmp_path / "rollout.json").read_text())
    for path in ("engine", "reference"):
        row = out[path]
        assert row["gen_tokens"] > 0 and row["seconds"] > 0 and row["decode_steps"] > 0
        assert 0 < row["live_share"] <= 1
    assert out["engine"]["gen_tokens"] == out["reference"]["gen_tokens"] and out["same_tokens"]
    engine = out["engine"]
    assert engine["floor_step_ms"] > 0
    assert engine["ceiling_tokens_per_s"] == pytest.approx(4 / (engine["floor_step_ms"] / 1e3), rel=1e-3)
    assert [(r["slots"], r["floor_cached_tokens"]) for r in engine["floor_grid"]] == [(4, 64), (1, 64)]
    assert all(r["floor_step_ms"] > 0 for r in engine["floor_grid"])
    # the fixed-shape prefill chunks (CUDA's graphs, eager here) beside each feed at its own shape
    assert out["prefill_chunks"] == [8, 0] and out["same_tokens_every_engine"]
    beside = out["engine_prefill_each"]
    assert beside["gen_tokens"] == engine["gen_tokens"] and beside["engine_speedup"] > 0
    # one more play split into decode runs and prefills (the host clock on the CPU): parts within the wall
    split = engine["device_split"]
    assert split["decode_calls"] > 0 and split["feed_calls"] > 0 and split["decode_s"] > 0 and split["prefill_s"] > 0
    assert split["decode_s"] + split["prefill_s"] <= split["wall_s"] + 1e-3 and split["rest_s"] >= -1e-3


def _rollout_module():
    spec = importlib.util.spec_from_file_location("rollout_benchmark", BENCHMARKS / "rollout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_synchronizing_calls_are_counted_by_the_line_that_made_them(monkeypatch):
    """CUDA's sync debug mode warns at each stall; the benchmark counts them per calling line and
    restores the mode (stood in for on the CPU, where torch has no CUDA)."""
    import torch

    rollout, modes = _rollout_module(), ["default"]
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: modes[-1])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def stalls():
        for _ in range(3):
            warnings.warn("called a synchronizing CUDA operation")
        warnings.warn("something else")
        return "played"

    out, sites = rollout.synchronizing_calls(stalls)
    assert out == "played" and list(sites.values()) == [3] and modes[-2:] == ["warn", "default"]
    assert next(iter(sites)).startswith("test_rollout_benchmark.py:")


@pytest.mark.parametrize("flag", ["--sync-debug", "--profile"])
def test_cuda_diagnostics_need_cuda(flag):
    with pytest.raises(SystemExit):
        _rollout_module().main([flag, "--device", "cpu"])
