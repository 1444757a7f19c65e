"""freeze / verify: the lock names the file and the key that changed since freeze."""

from __future__ import annotations

import hashlib
import pytest

from negotiation.errors import ConfigError
from negotiation.study import LockError, freeze, lock_problems, protocol_hash, verify

LOCK = "protocol/demo/lock.yaml"


@pytest.mark.parametrize("study", ["demo", "paper"])
def test_committed_locks_verify(study):
    assert lock_problems(study) == []


def test_freeze_covers_protocol_arms_and_named_domains_and_hashes_them(root):
    lock = freeze("demo", root)
    assert sorted(lock.files)[:2] == ["protocol/demo/arms.yaml", "protocol/demo/protocol.yaml"]
    assert len(lock.files) == 2 + 9
    sha = {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in lock.files}
    assert {rel: f.sha256 for rel, f in lock.files.items()} == sha
    combined = "".join(f"{rel}\0{sha[rel]}\n" for rel in sorted(sha))
    assert lock.protocol_hash == hashlib.sha256(combined.encode()).hexdigest()
    assert verify("demo", root).protocol_hash == protocol_hash("demo", root) == lock.protocol_hash


def test_a_changed_value_is_reported_with_its_key(root, edit):
    freeze("demo", root)
    edit(root / "protocol/demo/protocol.yaml", "  no_deal_penalty: 0.3", "  no_deal_penalty: 0.4")
    (problem,) = lock_problems("demo", root)
    assert problem.startswith("protocol/demo/protocol.yaml:environment.no_deal_penalty: changed since freeze")
    assert LOCK in problem


def test_a_tampered_byte_in_a_domain_file_is_caught(root):
    freeze("demo", root)
    path = root / "protocol/domains/used_car.yaml"
    data = path.read_bytes()
    index = data.index(b"title:") + len(b"title: ")
    path.write_bytes(data[:index] + bytes([data[index] ^ 0x20]) + data[index + 1:])  # flip a letter's case
    (problem,) = lock_problems("demo", root)
    assert problem.startswith("protocol/domains/used_car.yaml:title: changed since freeze")


def test_a_comment_only_change_is_still_a_change(root):
    freeze("demo", root)
    path = root / "protocol/demo/arms.yaml"
    path.write_text(path.read_text() + "# harmless?\n")
    (problem,) = lock_problems("demo", root)
    assert problem.startswith("protocol/demo/arms.yaml:<bytes>: changed since freeze")
    with pytest.raises(LockError):
        verify("demo", root)


def test_missing_lock_missing_file_and_edited_hash(root, edit):
    (root / LOCK).unlink()
    assert lock_problems("demo", root) == [f"{LOCK}:<file>: no lock; run `nego protocol freeze demo`"]
    lock = freeze("demo", root)
    edit(root / LOCK, lock.protocol_hash, "f" * 64)
    assert lock_problems("demo", root) == [f"{LOCK}:protocol_hash: does not match the file hashes it lists"]
    freeze("demo", root)
    (root / "protocol/domains/job_offer.yaml").unlink()
    assert lock_problems("demo", root)[0].startswith("protocol/domains/job_offer.yaml:<file>: frozen file is missing")


def test_lock_must_cover_every_frozen_file(root, edit):
    freeze("demo", root)
    edit(root / LOCK, "  protocol/domains/used_car.yaml:", "  protocol/domains/used_car_x.yaml:")
    problems = lock_problems("demo", root)
    assert any(p.startswith("protocol/domains/used_car_x.yaml:<file>: frozen file is missing") for p in problems)


def test_freeze_refuses_overlapping_seed_blocks_and_invalid_studies(root, edit):
    protocol = root / "protocol/demo/protocol.yaml"
    edit(protocol, "pilot: {start: 4000000, stop: 4000001}", "pilot: {start: 4999, stop: 5000}")
    with pytest.raises(ConfigError, match=r"protocol/demo/protocol.yaml:seeds.pilot: overlaps seeds.training"):
        freeze("demo", root)
    edit(protocol, "  g_fmt: 0.05", "  g_fmt: -1")
    with pytest.raises(ConfigError, match=r"protocol/demo/protocol.yaml:environment.g_fmt:"):
        freeze("demo", root)


def test_refreezing_changes_the_protocol_hash_only_when_a_frozen_file_changes(root, edit):
    first = freeze("demo", root).protocol_hash
    assert freeze("demo", root).protocol_hash == first
    edit(root / "protocol/demo/protocol.yaml", "  converge_from_turn: 16", "  converge_from_turn: 15")
    assert freeze("demo", root).protocol_hash != first
