"""benchmarks/training.py speed --small times one rollout + update step of the smallest demo width."""

from __future__ import annotations

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_training_benchmark_small_mode_prints_its_figures():
    out = run_small("training.py", "speed").stdout.splitlines()
    assert out[0].split() == ["width", "episodes", "policy", "seller", "turns", "s/step"]
    width, episodes, policy, turns, seconds = out[1].split()
    assert (episodes, policy) == ("16", "untrained") and int(turns) > 0 and float(seconds) > 0 and len(out) == 2
