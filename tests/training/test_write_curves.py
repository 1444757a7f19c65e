"""A training step's curves are written as pandas' ``to_csv`` writes them."""

from __future__ import annotations

from pathlib import Path

from negotiation.training._run import RunLedger, write_curves


def test_curves_and_validation_tables(tmp_path: Path):
    ledger = RunLedger(Path("."), 0, 0, None, None, curves=[{"step": 1, "train/loss": 0.5}], val_scores={0: 0.25})
    write_curves(ledger, tmp_path)
    assert (tmp_path / "curves.csv").read_text() == "step,train/loss\n1,0.5\n"
    assert (tmp_path / "validation.csv").read_text() == "step,combined_step,validation/score\n0,0,0.25\n"
