"""benchmarks/anac_peer.py --small plays two ANAC pairings in our engine and in NegMAS's SAOMechanism
and prints a table row each and the match rate (both match)."""

from __future__ import annotations

import pytest

from tests.benchmarks.small import run_small


@pytest.mark.slow
def test_anac_peer_benchmark_small_mode_prints_its_table():
    pytest.importorskip("negmas_genius_agents")
    out = run_small("anac_peer.py").stdout
    rows = [line for line in out.splitlines() if line.startswith("| ") and "used_car | 0 |" in line]
    assert len(rows) == 2 and all(row.endswith("| yes |") for row in rows)
    assert "2 of 2 runs match" in out
