"""Long stages report progress on stderr: done/total, stats and ETA (log lines when not a terminal)."""

from __future__ import annotations

import logging

import pytest

from negotiation._logging import configure_logging, level_for
from negotiation.pipeline._progress import StageProgress, eta_text
from negotiation.training import train_arm
from tests.training.tiny_setup import ENV, tiny_config


def test_eta_extrapolates_the_rate_so_far():
    assert eta_text(30.0, 10, 40) == "1:30" and eta_text(5.0, 0, 10) == "?"


def test_log_lines_carry_count_stats_and_eta(caplog, monkeypatch):
    monkeypatch.setenv("NEGO_PROGRESS", "0")
    caplog.set_level(logging.INFO, logger="negotiation.progress")
    with StageProgress("evaluate@arm", unit="episodes") as progress:
        for done in range(1, 21):
            progress.update(done, 20, f"errors 0, retries {done}, $0.0000")
    lines = [r.getMessage() for r in caplog.records]
    assert 10 <= len(lines) <= 20 and lines[-1].startswith("evaluate@arm: 20/20 episodes, errors 0, retries 20")
    assert all("ETA" in line for line in lines)


def test_training_reports_every_step_with_reward_and_kl(tmp_path):
    seen = []
    train_arm(tiny_config(steps=3), ENV, tmp_path / "w8", track=False,
              on_step=lambda step, total, m: seen.append((step, total, m["train/reward"], m["train/kl_penalty"])))
    assert [(s, t) for s, t, *_ in seen] == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("verbosity, level", [(-1, logging.ERROR), (0, logging.WARNING), (1, logging.INFO),
                                              (2, logging.DEBUG), (5, logging.DEBUG)])
def test_verbosity_maps_to_levels(verbosity, level, monkeypatch):
    monkeypatch.delenv("NEGO_LOG_LEVEL", raising=False)
    assert level_for(verbosity) == level
    assert configure_logging(verbosity) == level == logging.getLogger("negotiation").level


def test_environment_level_wins(monkeypatch):
    monkeypatch.setenv("NEGO_LOG_LEVEL", "debug")
    assert configure_logging(-1) == logging.DEBUG
