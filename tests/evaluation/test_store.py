"""The results store: atomic shards, resume, retry of error rows, no duplicates, locking."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from negotiation.errors import ConfigError
from negotiation.evaluation import ResultsStore, StoreLockedError

A = ("arm1", "used_car", 5, "b1")
B = ("arm1", "job_offer", 5, "b1")
C = ("arm1", "used_car", 6, "b2:with/odd?chars")


def row(key, outcome="deal", S=0.5, **extra):
    arm, domain, seed, buyer = key
    return {"arm": arm, "domain": domain, "seed": seed, "buyer": buyer, "outcome": outcome, "S": S, **extra}


def turns(key, n):
    return [{"arm": key[0], "domain": key[1], "seed": key[2], "buyer": key[3], "turn": t} for t in range(1, n + 1)]


def test_plan_runs_new_keys_skips_done_and_keeps_errors_unless_asked(tmp_path):
    store = ResultsStore(tmp_path)
    store.write(A, 1, row(A), turns(A, 2))
    store.write(B, 1, row(B, "error", math.nan, error_class="Timeout"), [])
    todo, counts = store.plan([A, B, C], retry_errors=False)
    assert todo == [(C, 1)] and counts == {"done": 1, "errors_kept": 1, "errors_retried": 0, "new": 1}
    todo, counts = store.plan([A, B, C], retry_errors=True)
    assert todo == [(B, 2), (C, 1)] and counts["errors_retried"] == 1


def test_a_retried_error_is_replaced_in_the_table_not_duplicated(tmp_path):
    store = ResultsStore(tmp_path)
    store.write(B, 1, row(B, "error", math.nan, error_class="Timeout"), [])
    store.write(B, 2, row(B, "deal", 0.7), turns(B, 3))
    store.write(A, 1, row(A), turns(A, 2))
    episodes, turn_table = store.compact()
    assert list(zip(episodes["domain"], episodes["outcome"])) == [("job_offer", "deal"), ("used_car", "deal")]
    assert len(turn_table) == 5
    assert store.plan([A, B], retry_errors=True)[0] == []
    # Both attempts stay on disk (append-only); only the latest counts.
    assert len(list((tmp_path / "shards").glob("*/*.json"))) == 3


def test_compacted_tables_are_sorted_by_key_and_turn_and_written_as_parquet(tmp_path):
    store = ResultsStore(tmp_path)
    for key, n in ((C, 1), (A, 2), (B, 3)):
        store.write(key, 1, row(key), list(reversed(turns(key, n))))
    episodes, turn_table = store.compact()
    keys = list(zip(episodes["arm"], episodes["domain"], episodes["seed"], episodes["buyer"]))
    assert keys == sorted(keys)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "episodes.parquet"), episodes)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "turns.parquet"), turn_table)


def test_columns_follow_a_success_row_even_when_an_error_row_sorts_first(tmp_path):
    store = ResultsStore(tmp_path)
    store.write(B, 1, row(B, "error", math.nan, error_class="X"), [])
    store.write(A, 1, row(A, extra_col=1), turns(A, 1))
    episodes, _ = store.frames()
    assert list(episodes.columns) == ["arm", "domain", "seed", "buyer", "outcome", "S", "extra_col", "error_class"]


def test_unfinished_temporary_files_are_ignored(tmp_path):
    store = ResultsStore(tmp_path)
    store.write(A, 1, row(A), [])
    (tmp_path / "shards" / "arm1" / ".half-written.json.123.tmp").write_text("{")
    (tmp_path / "shards" / "arm1" / "garbage.json").write_text("{")
    assert len(store.frames()[0]) == 1


def test_shard_content_and_name(tmp_path):
    path = ResultsStore(tmp_path).write(C, 3, row(C), turns(C, 1))
    assert path.parent.name == "arm1" and path.name.startswith("used_car-6-") and path.name.endswith(".a003.ok.json")
    data = json.loads(path.read_text())
    assert data["key"] == {"arm": "arm1", "domain": "used_car", "seed": 6, "buyer": "b2:with/odd?chars"}
    assert data["version"] == 1 and data["attempt"] == 3 and len(data["turns"]) == 1


def test_a_corrupt_shard_is_reported_with_its_path(tmp_path):
    store = ResultsStore(tmp_path)
    path = store.write(A, 1, row(A), [])
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=str(path)):
        store.frames()


def test_one_writer_at_a_time(tmp_path):
    store = ResultsStore(tmp_path)
    with store.lock():
        with pytest.raises(StoreLockedError, match=".lock"):
            with ResultsStore(tmp_path).lock():
                pass
    with store.lock():  # released
        pass


def test_a_row_no_table_can_hold_is_stored_as_an_error_not_as_ok(tmp_path):
    """Regression: a huge token count was stored as ok, then every compaction raised
    OverflowError and reruns skipped the key, until the shard was deleted by hand."""
    store = ResultsStore(tmp_path)
    path = store.write(A, 1, row(A, tokens_in_seller=10**30), turns(A, 2))
    assert path.name.endswith(".error.json")
    store.write(B, 1, row(B), turns(B, 1))
    episodes, turns_df = store.compact()
    bad = episodes.set_index("domain").loc["used_car"]
    assert (bad.outcome, bad.error_class) == ("error", "InvalidRecord")
    assert "tokens_in_seller" in bad.error_message and pd.isna(bad.tokens_in_seller)
    assert set(turns_df.domain) == {"job_offer"}
    todo, _ = store.plan([A, B], retry_errors=True)
    assert todo == [(A, 2)]


@pytest.mark.parametrize("value", [10**30, [1, 2], {"a": 1}, "bad \ud800 text"])
def test_compaction_never_fails_on_a_stored_shard(tmp_path, value):
    """A shard written as ok by an older version with an unstorable value still compacts."""
    store = ResultsStore(tmp_path)
    store.write(B, 1, row(B), turns(B, 1))
    poisoned = store._shard_path(A, 1, "ok")
    poisoned.write_text(json.dumps({"version": 1, "key": dict(zip(["arm", "domain", "seed", "buyer"], A)),
                                    "attempt": 1, "episode": row(A, cost=value), "turns": turns(A, 1)}))
    episodes, _ = store.compact()
    assert len(pd.read_parquet(tmp_path / "episodes.parquet")) == len(episodes) == 2
    if value == 10**30:
        assert sorted(episodes.outcome) == ["deal", "error"]
    assert (tmp_path / "episodes.parquet").exists() and not list(tmp_path.glob(".*.tmp"))


def test_symlinks_never_lead_out_of_the_results_folder(tmp_path):
    """Regression: symlinks under a results folder were followed (reads and writes)."""
    outside = tmp_path / "elsewhere"
    other = ResultsStore(outside)
    other.write(A, 1, row(A), turns(A, 1))
    store = ResultsStore(tmp_path / "store")
    store.shards.mkdir(parents=True)
    (store.shards / "arm1").symlink_to(outside / "shards" / "arm1", target_is_directory=True)
    assert store.scan() == {} and store.plan([A], retry_errors=False)[1]["new"] == 1
    with pytest.raises(ConfigError, match="symlink"):
        store.write(A, 1, row(A), turns(A, 1))


@pytest.mark.parametrize("arm", ["..", ".", ".hidden", "../../x"])
def test_an_arm_name_never_makes_a_folder_outside_the_shards(tmp_path, arm):
    store = ResultsStore(tmp_path / "store")
    path = store.write((arm, "used_car", 5, "b1"), 1, row((arm, "used_car", 5, "b1")), [])
    assert path.parent.parent == store.shards and not path.parent.name.startswith(".")
    assert len(store.scan()) == 1


@pytest.mark.parametrize("link", ["parent", "store", "shards", "superseded"])
def test_a_store_refuses_a_linked_pilot_store_or_superseded_folder(tmp_path, link):
    """Regression: a symlinked pilot/ or superseded/ inside a results folder was followed outside it."""
    from negotiation.evaluation._fingerprint import SUPERSEDED_DIR, move_aside

    outside = tmp_path / "outside"
    outside.mkdir()
    results = tmp_path / "results"
    parent = results / "pilot"
    where = {"parent": parent, "store": parent / "arm1", "shards": parent / "arm1" / "shards",
             "superseded": parent / "arm1" / SUPERSEDED_DIR}[link]
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match="symlink"):
        ResultsStore(parent / "arm1")
    with pytest.raises(ConfigError, match="symlink"):
        move_aside(parent / "arm1", "old")
    assert not any(outside.iterdir())
