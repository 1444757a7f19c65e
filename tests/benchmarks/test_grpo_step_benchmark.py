"""benchmarks/grpo_step.py runs in its small mode (a tiny CPU run through the real trainer) and prints its figures."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.benchmarks.small import BENCHMARKS, run_small


@pytest.mark.slow
def test_grpo_step_benchmark_small_mode_prints_its_figures(tmp_path):
    out = run_small("grpo_step.py", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "figures.json"),
                    timeout=900)
    figures = json.loads((tmp_path / "figures.json").read_text())["sizes"]["lm_xs"]["ours"]
    assert figures["step_s"] > 0 and figures["generated_tokens_per_step"] > 0 and "lm_xs ours" in out.stdout


def _grpo_step_module():
    spec = importlib.util.spec_from_file_location("grpo_step_benchmark", BENCHMARKS / "grpo_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("size, steps, warmup", [("lm_m", 4, 4), ("lm_m", 6, 5), ("lm_xs", 4, None)])
def test_a_short_timing_run_warms_up_within_its_steps(size, steps, warmup):
    """The GPU recipe warms up for 5 steps: ``--steps 4`` on lm_m stopped at the schedule's check
    (seen on the GPU machine). A short run keeps every other part of the recipe."""
    from negotiation.study import load_study

    protocol = load_study("lm").protocol
    recipe = protocol.recipe_for(size)
    clamped = _grpo_step_module()._warmup_within(protocol, size, steps).recipe_for(size)
    assert clamped.warmup_steps == (recipe.warmup_steps if warmup is None else warmup)
    assert clamped.model_copy(update={"warmup_steps": recipe.warmup_steps}) == recipe
