"""The demo policy bases' imitation warm start (``negotiation.training._imitation``): it learns the
scripted sellers it imitates, a wider network fits them better in one budget, and a base is the
same bytes every time."""

from __future__ import annotations

import json

import pytest

from negotiation.agents import Policy, PolicyArch
from negotiation.study import load_study
from negotiation.training import IMITATION_RECORD, ImitationRecord, imitate, imitation_corpus, write_initial_policy

STUDY = load_study("demo")


@pytest.fixture(scope="module")
def small():
    """The demo's warm start cut to two training seeds per domain (its personas and recipe)."""
    warm = STUDY.protocol.policy_warm_start.model_copy(update={"seeds_per_domain": 2})
    protocol = STUDY.protocol.model_copy(update={"policy_warm_start": warm})
    return protocol, imitation_corpus(protocol, Policy.init(PolicyArch(width=16), 0).bins)


def test_the_corpus_is_every_persona_on_every_training_domain(small):
    protocol, corpus = small
    assert corpus.skipped == 0 and len(corpus) > 100
    assert corpus.actions[:, 0].sum() > 0 and (corpus.actions[:, 0] == 0).sum() > 0  # accepts and counters


def test_imitation_learns_and_a_wider_network_fits_better_in_the_same_budget(small):
    protocol, corpus = small
    last = {}
    for width in (16, 128):
        first, last[width] = imitate(Policy.init(PolicyArch(width=width), 0), corpus, protocol.policy_warm_start)
        assert last[width] < 0.6 * first, (width, first, last[width])
    assert last[128] < last[16]


def test_a_base_is_written_with_its_record_and_is_the_same_bytes_every_time(tmp_path):
    one, two = (write_initial_policy(STUDY, "w16", tmp_path / name) for name in ("a", "b"))
    assert sorted(p.name for p in one.iterdir()) == sorted(["config.json", "weights.pt", IMITATION_RECORD])
    for path in one.iterdir():
        assert (two / path.name).read_bytes() == path.read_bytes(), path.name
    record = ImitationRecord(**json.loads((one / IMITATION_RECORD).read_text()))
    assert record.size == "w16" and record.steps == STUDY.protocol.policy_warm_start.steps
    assert record.loss_last < record.loss_first and record.corpus_turns > 0
    untrained = Policy.init(PolicyArch(width=16), STUDY.protocol.sizes["w16"].init_seed)
    assert any((a != b).any() for a, b in zip(Policy.load(one).net.parameters(), untrained.net.parameters()))
