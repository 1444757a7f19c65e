"""The warm-start corpus: training domains and seeds only, both prompt variants."""

from __future__ import annotations

from negotiation.ladder import corpus_seeds, seller_chats
from tests.conftest import tiny_lm_protocol


def test_corpus_reads_training_domains_and_seeds_only():
    protocol = tiny_lm_protocol()
    chats = list(seller_chats(protocol, "train")) + list(seller_chats(protocol, "validation"))
    assert {c.domain for c in chats} == set(protocol.domains.training)
    block = protocol.seeds.training
    assert all(block.start <= c.seed < block.stop for c in chats)
    assert set(corpus_seeds(protocol, "train")).isdisjoint(corpus_seeds(protocol, "validation"))
    assert {c.variant for c in chats} == {"evaluation", "training"}
    assert all(c.messages[-1]["role"] == "assistant" for c in chats)
