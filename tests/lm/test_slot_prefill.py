"""The fixed-shape layout of a slot decoder's prefill (``chunk_feed``), property by property."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.lm._slot_prefill import chunk_feed, row_buckets

TRASH = 1000


@st.composite
def feeds(draw):
    total = draw(st.integers(1, 12))
    slots = draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=total, unique=True))
    tokens = [draw(st.lists(st.integers(1, 50), min_size=1, max_size=20)) for _ in slots]
    lengths = [draw(st.integers(0, 40)) for _ in slots]
    chunk = draw(st.one_of(st.none(), st.integers(1, 8)))
    bucket = draw(st.one_of(st.none(), st.sampled_from(row_buckets(total, smallest=2))))
    if bucket is not None and bucket < len(slots):
        bucket = total
    return slots, tokens, lengths, chunk, bucket, total


@settings(max_examples=200, deadline=None)
@given(feeds())
def test_each_fed_row_reads_back_whole_at_its_positions_and_padding_writes_only_to_the_trash(feed):
    slots, tokens, lengths, chunk, bucket, total = feed
    out = chunk_feed(slots, tokens, lengths, chunk=chunk, bucket=bucket, total_slots=total, trash=TRASH)
    chunks, rows, _ = out.packed.shape
    t = out.columns
    assert rows == (len(slots) if bucket is None else bucket) and t == (max(map(len, tokens)) if chunk is None else chunk)
    order = out.packed[0, :, -2].tolist()
    assert len(set(order)) == rows and all(0 <= s < total for s in order)  # each cache row once
    assert (out.packed[:, :, -2] == out.packed[0, :, -2]).all()
    assert out.identity == (bucket == total) and (not out.identity or order == list(range(total)))
    ids = out.packed[:, :, :t].transpose(0, 1).reshape(rows, chunks * t)
    pos = out.packed[:, :, t:2 * t].transpose(0, 1).reshape(rows, chunks * t)
    fed = dict(zip(slots, zip(tokens, lengths)))
    for r, s in enumerate(order):
        real = pos[r] != TRASH
        if s in fed:
            new, n = fed[s]
            assert ids[r][real].tolist() == new and pos[r][real].tolist() == list(range(n, n + len(new)))
            assert bool(real[-1])  # right-aligned: the last chunk's last column is the row's last token
            assert out.packed[:, r, -1].tolist() == [0] * (chunks - 1) + [1]
        else:
            assert not real.any() and not out.packed[:, r, -1].any()
    assert out.longest == max(n + len(new) for new, n in zip(tokens, lengths))


def test_row_buckets_double_from_the_smallest_and_end_at_the_slot_count():
    assert row_buckets(128) == [8, 16, 32, 64, 128]
    assert row_buckets(100) == [8, 16, 32, 64, 100]
    assert row_buckets(3) == [3]
