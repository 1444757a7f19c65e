"""Shared MLflow tracking: retries on SQLite locks, no lost runs under concurrent writers."""

from __future__ import annotations


def test_retrying_retries_locked_database_then_succeeds():
    from negotiation.tracking import retrying

    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("(sqlite3.OperationalError) database is locked")
        return "ok"

    assert retrying(flaky, first_wait=0.001) == "ok"
    assert len(calls) == 3


def test_retrying_does_not_hide_other_errors():
    import pytest

    from negotiation.tracking import retrying

    def broken():
        raise ValueError("bad param value")

    with pytest.raises(ValueError, match="bad param"):
        retrying(broken, first_wait=0.001)


def test_concurrent_writers_lose_no_runs(tmp_path):
    """Four processes create runs in one fresh SQLite store at once: all four runs land."""
    import subprocess
    import sys

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = (
        "import sys; from negotiation.tracking import MlflowTracker; "
        "t = MlflowTracker('race', sys.argv[1], {'p': '1'}, {'arm': sys.argv[1]}, uri=sys.argv[2]); "
        "t.log_step(0, {'m': 1.0}); t.finish()"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, f"arm{i}", uri]) for i in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("race")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.data.tags["arm"] for r in runs) == ["arm0", "arm1", "arm2", "arm3"]
