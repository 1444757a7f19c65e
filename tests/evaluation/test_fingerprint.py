"""A results store holds one fingerprint's episodes: resumed when it matches, moved aside (kept,
never reused, never deleted) when the seller, buyers, sampling, protocol or prompts changed."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest
from tests.evaluation.helpers import DEMO, FAST_RETRY

from negotiation.errors import ConfigError
from negotiation.evaluation import RunOptions, StoreFingerprint, adopt_fingerprint, build_cell, evaluate_cell

SEEDS = (5_000_000, 5_000_001)


def run(out, *, seller="scripted:boulware", buyer="scripted:titfortat", protocol_hash="p" * 64,
        seller_sha256="s" * 64, server=None):
    if server is not None:
        buyer = f"litellm:openai/titfortat?api_base={server.api_base}"
    cell = build_cell(DEMO, arm="arm", seller=seller, buyers={"tft": buyer}, domains=("used_car",), seeds=SEEDS)
    return asyncio.run(evaluate_cell(cell, out, DEMO, protocol_hash=protocol_hash, seller_sha256=seller_sha256,
                                     options=RunOptions(concurrency=2, retry=FAST_RETRY)))


def shard_count(root):
    return len(list((root / "shards").glob("*/*.json")))


def test_same_inputs_resume_and_play_nothing_twice(tmp_path, server):
    run(tmp_path, server=server)
    played = server.handler.counts["requests"]
    assert played > 0 and json.loads((tmp_path / "fingerprint.json").read_text())["buyers"]["tft"].startswith("litellm:")
    run(tmp_path, server=server)
    assert server.handler.counts["requests"] == played
    assert not (tmp_path / "superseded").exists()


@pytest.mark.parametrize("change", [{"seller_sha256": "t" * 64}, {"buyer": "scripted:boulware?e=0.5"},
                                    {"protocol_hash": "q" * 64}, {"seller": "scripted:conceder"}])
def test_another_fingerprint_moves_the_store_aside_and_replays(tmp_path, change):
    first = run(tmp_path)
    before = pd.read_parquet(tmp_path / "episodes.parquet")
    second = run(tmp_path, **change)
    moved = list((tmp_path / "superseded").iterdir())
    assert len(moved) == 1 and shard_count(moved[0]) == len(before) == len(first.episodes)
    pd.testing.assert_frame_equal(pd.read_parquet(moved[0] / "episodes.parquet"), before)
    assert second.progress.done == len(second.episodes) == len(before)  # played again, none reused
    assert shard_count(tmp_path) == len(before)


def test_prompt_or_sampling_change_moves_the_store_aside(tmp_path, server):
    run(tmp_path, server=server)
    seller = f"litellm:openai/boulware?api_base={server.api_base}"
    run(tmp_path, server=server, seller=seller)
    run(tmp_path, server=server, seller=seller + "&prompt=training")
    run(tmp_path, server=server, seller=seller + "&prompt=training&temperature=0.5")
    assert len(list((tmp_path / "superseded").iterdir())) == 3


def test_a_store_without_fingerprint_is_moved_aside_not_reused(tmp_path):
    run(tmp_path)
    (tmp_path / "fingerprint.json").unlink()
    run(tmp_path)
    (moved,) = (tmp_path / "superseded").iterdir()
    assert moved.name.startswith("unfingerprinted-") and shard_count(moved) == len(SEEDS)


def test_an_unreadable_fingerprint_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "fingerprint.json").write_text("{not json")
    fingerprint = StoreFingerprint(seller="s", buyers={}, sampling={}, protocol_hash="p", prompt_hash="")
    with pytest.raises(ConfigError, match="fingerprint.json"):
        adopt_fingerprint(tmp_path, fingerprint)
    assert (tmp_path / "fingerprint.json").read_text() == "{not json"
