"""negotiation.learning: a resumed task keeps finished runs and continues partial ones; a task
read against a frozen control trains that control at FROZEN_RATE beside the run, from the same
base weights (a run or control from other weights is refused, naming the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation import learning
from negotiation.learning import _run
from negotiation.study import load_study
from negotiation.errors import ConfigError
from negotiation.evaluation import folder_sha256
from negotiation.training.lm import CURVES_FILE, FROZEN_RATE, RESUME_FILE


@pytest.fixture
def trained(monkeypatch, tmp_path) -> list[tuple[str, float, bool]]:
    """Stand-ins for the base builder, the trainer and the verdict: record what would be trained."""
    calls: list[tuple[str, float, bool]] = []
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "model.safetensors").write_bytes(b"weights")
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
    _finished_run(finished, folder_sha256(tmp_path / "base"))
    _finished_run(partial, folder_sha256(tmp_path / "base"))
    (partial / RESUME_FILE).write_bytes(b"state")
    learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path, resume=True)
    assert trained == [("negotiation_lm_m_control", FROZEN_RATE, True)]


def _finished_run(folder: Path, weights: str) -> None:
    folder.mkdir()
    (folder / CURVES_FILE).write_text("step\n1\n")
    (folder / _run.BASE_RECORD).write_text(f'{{"version": 1, "weights_sha256": "{weights}"}}')


def test_a_control_from_other_base_weights_is_refused(trained, tmp_path):
    study = load_study("lm")
    _finished_run(tmp_path / "negotiation_lm_m_control", "0" * 64)  # a control carried in from a rebuilt base
    with pytest.raises(ConfigError, match="negotiation_lm_m_control/base.json: weights_sha256 0+ does not match"):
        learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path,
                                   resume=True)
    assert trained == [("negotiation_lm_m", 1e-4, True)]  # the run itself trained and kept its curves


def test_a_partial_run_does_not_continue_on_other_base_weights(trained, tmp_path):
    study = load_study("lm")
    _finished_run(tmp_path / "negotiation_lm_m", "0" * 64)
    (tmp_path / "negotiation_lm_m" / RESUME_FILE).write_bytes(b"state")
    with pytest.raises(ConfigError, match="the run cannot continue on another base"):
        learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path,
                                   resume=True)
    assert trained == []


def test_parts_train_one_run_each_and_only_the_whole_reads_a_verdict(trained, tmp_path):
    study = load_study("lm")

    def run(parts: tuple[str, ...]):
        return learning.run_learning_task(study.protocol, study.learning, "negotiation", machine="gpu", out=tmp_path,
                                          resume=True, parts=parts)
    assert run(()) is None and trained == []  # the base alone
    assert run(("control",)) is None and trained == [("negotiation_lm_m_control", FROZEN_RATE, True)]
    with pytest.raises(ValueError, match=r"\['update'\] are not run or control"):
        run(("update",))
