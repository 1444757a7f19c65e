"""The learning ladder on two CPU cores: the token trainer must learn the format and opening tasks
of ``protocol/lm/learning.yaml`` within their CPU budgets (issue 27). This is the test that fails
when the trainer stops learning; ``benchmarks/learning.py --small`` is run by
tests/benchmarks/test_learning_benchmark.py."""

from __future__ import annotations

import json

import pytest

from negotiation.protocol import load_learning
from negotiation.study import load_study
from negotiation.learning import run_learning_task
from negotiation.training.lm import LmRuntime


@pytest.fixture(scope="module")
def ladder_out(tmp_path_factory):
    """One folder for both tasks: the tokenizer and the CPU base are built once and shared."""
    return tmp_path_factory.mktemp("learning")


# The finding of issue 27 (protocol/lm/learning.yaml's header, docs/results/ladder-cpu-2026-12-04):
# the format task's 100-step lm_xs base never writes a parsable turn, so its reward is constant
# and GRPO has no signal. Strict: the day that cheap base parses and the task passes, this turns
# red and its budget is re-set from measurement. The opening task's 400-step base parses.
CPU_FINDING = pytest.mark.xfail(strict=True, reason="issue 27: the format task's cpu lm_xs base never parses")


@pytest.mark.slow
@pytest.mark.parametrize("task", [pytest.param("format", marks=CPU_FINDING), "opening"])
def test_the_trainer_learns_the_task_within_its_cpu_budget(ladder_out, task):
    study = load_study("lm")
    ladder = load_learning(study.protocol, study.root)
    verdict = run_learning_task(study.protocol, ladder, task, machine="cpu", out=ladder_out,
                                runtime=LmRuntime(threads=2))
    shown = [(c["metric"], round(c["first_mean"], 4), round(c["last_mean"], 4), c["values"]) for c in verdict["criteria"]]
    assert verdict["passed"], f"{task} did not learn within its cpu budget: {shown}"
    written = json.loads((ladder_out / f"{task}_lm_xs" / "verdict.json").read_text())
    assert written["passed"] and written["task"] == task

