"""A results store holds one fingerprint's episodes: resumed when it matches, moved aside (kept,
never deleted) when the seller, its weights, buyers, sampling, protocol or prompts changed, and
moved back when a later run's inputs match it again."""

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
        seller_weights="s" * 64, server=None, **kwargs):
    if server is not None:
        buyer = f"litellm:openai/titfortat?api_base={server.api_base}"
    cell = build_cell(DEMO, arm="arm", seller=seller, buyers={"tft": buyer}, domains=("used_car",), seeds=SEEDS)
    return asyncio.run(evaluate_cell(cell, out, DEMO, protocol_hash=protocol_hash, seller_weights=seller_weights,
                                     options=RunOptions(concurrency=2, retry=FAST_RETRY), **kwargs))


def shard_count(root):
    return len(list((root / "shards").glob("*/*.json")))


def test_same_inputs_resume_and_play_nothing_twice(tmp_path, server):
    run(tmp_path, server=server)
    played = server.handler.counts["requests"]
    assert played > 0 and json.loads((tmp_path / "fingerprint.json").read_text())["buyers"]["tft"].startswith("litellm:")
    run(tmp_path, server=server)
    assert server.handler.counts["requests"] == played
    assert not (tmp_path / "superseded").exists()


@pytest.mark.parametrize("change", [{"seller_weights": "t" * 64}, {"buyer": "scripted:boulware?e=0.5"},
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


def test_a_run_by_hand_with_the_arms_spec_resumes_the_pipelines_episodes(tmp_path):
    """The pipeline names the arm's sampling role and seller.json's weights hash; ``nego evaluate``
    by hand names neither: the same inputs all the same, so nothing is bought again."""
    pipeline = run(tmp_path, seller_weights=None, seller_sampling="reference_seller", seller_sha256="r" * 64)
    by_hand = run(tmp_path, seller_weights=None)
    assert pipeline.progress.done == len(SEEDS) and by_hand.progress.done == 0
    assert not (tmp_path / "superseded").exists()


def test_the_weights_hash_is_the_folders_whoever_computes_it(tmp_path):
    from negotiation.evaluation import folder_sha256, seller_weights_sha256

    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "weights.pt").write_bytes(b"w" * 10)
    want = folder_sha256(tmp_path / "ckpt")
    assert seller_weights_sha256("policy:ckpt", root=tmp_path) == want
    assert seller_weights_sha256(f"hf:{tmp_path / 'ckpt'}?device=cpu") == want
    assert seller_weights_sha256("scripted:boulware") is None
    (tmp_path / "ckpt" / "weights.pt").write_bytes(b"v" * 10)  # retrained at the same path: another seller
    assert seller_weights_sha256("policy:ckpt", root=tmp_path) != want


def test_a_superseded_store_that_matches_is_moved_back_not_bought_again(tmp_path):
    first = run(tmp_path)
    run(tmp_path, seller_weights="t" * 64)  # another seller: the first store goes aside
    again = run(tmp_path)  # the first seller again: its store comes back, the second goes aside
    assert again.progress.done == 0 and len(again.episodes) == len(first.episodes)
    pd.testing.assert_frame_equal(again.episodes, first.episodes)
    (moved,) = (tmp_path / "superseded").iterdir()
    assert json.loads((moved / "fingerprint.json").read_text())["seller_weights_sha256"] == "t" * 64


@pytest.mark.parametrize("record, resumed", [("r" * 64, True), ("x" * 64, False)])
def test_a_version_1_fingerprint_of_the_same_seller_record_is_resumed(tmp_path, record, resumed):
    run(tmp_path)
    path = tmp_path / "fingerprint.json"
    old = json.loads(path.read_text())
    old.pop("seller_weights_sha256")
    path.write_text(json.dumps({**old, "version": 1, "seller_sha256": "r" * 64}))
    again = run(tmp_path, seller_sha256=record)  # the pipeline's hash of select/<arm>/seller.json
    assert (again.progress.done == 0) is resumed and (tmp_path / "superseded").exists() is not resumed
    assert json.loads(path.read_text())["version"] == 2
