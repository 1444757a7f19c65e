"""negotiation.learning: a resumed task keeps finished runs and continues partial ones; a task
read against a frozen control trains that control at FROZEN_RATE beside the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation import learning
from negotiation.learning import _run
from negotiation.study import load_study
from negotiation.training.lm import CURVES_FILE, FROZEN_RATE, RESUME_FILE


@pytest.fixture
def trained(monkeypatch, tmp_path) -> list[tuple[str, float, bool]]:
    """Stand-ins for the base builder, the trainer and the verdict: record what would be trained."""
    calls: list[tuple[str, float, bool]] = []
    monkeypatch.setattr(_run, "_base", lambda protocol, size, warm, out, device: tmp_path / "base")
    monkeypatch.setattr(_run, "train_lm_arm", lambda cfg, run_dir, track, resume: calls.append(
        (Path(run_dir).name, cfg.run_protocol.training.learning_rate, resume)))
    monkeypatch.setattr(_run, "task_verdict", lambda task, run_dir, control_dir=None: {"passed": True, "criteria": []})
    monkeypatch.setattr(_run, "write_verdict", lambda run_dir, verdict: None)
    return calls


def test_a_paired_task_trains_its_frozen_control_beside_the_run(trained, tmp_path):
    study = load_study("lm")
    learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path)
    assert trained == [("negotiation_lm_m", 1e-4, False), ("negotiation_lm_m_control", FROZEN_RATE, False)]


def test_resume_keeps_a_finished_run_and_continues_a_partial_one(trained, tmp_path):
    study = load_study("lm")
    finished, partial = tmp_path / "negotiation_lm_m", tmp_path / "negotiation_lm_m_control"
    for folder in (finished, partial):
        folder.mkdir()
        (folder / CURVES_FILE).write_text("step\n1\n")
    (partial / RESUME_FILE).write_bytes(b"state")
    learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path, resume=True)
    assert trained == [("negotiation_lm_m_control", FROZEN_RATE, True)]
