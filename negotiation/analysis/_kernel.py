"""The numba decoder of ``_resample`` (imported only when numba is installed): the same rules as
``decode_numpy``, one row at a time in registers, on the words the chunk's Generator drew."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True, inline="always")
def _row_twelve_bit(buf, table, picks):  # pragma: no cover - compiled
    """All-accepted 12-bit fields (tables of 4,096 sums: 64 seeds in pairs, 16 in triples, 8
    in quadruples), unrolled five per word into two short, independent addition chains."""
    mask = np.uint64(0xFFF)
    s1, s2, s3, s4 = np.uint64(12), np.uint64(24), np.uint64(36), np.uint64(48)
    full_words = picks // 5
    even = table[0] * 0
    odd = table[0] * 0
    for w in range(full_words):
        word = buf[w]
        even += table[word & mask] + table[(word >> s2) & mask] + table[(word >> s4) & mask]
        odd += table[(word >> s1) & mask] + table[(word >> s3) & mask]
    word = buf[full_words] if picks > 5 * full_words else np.uint64(0)
    for _ in range(picks - 5 * full_words):
        even += table[word & mask]
        word >>= s1
    return even + odd


@njit(nogil=True, cache=True, inline="always")
def _row_with_rejection(buf, table, picks, bits, size):  # pragma: no cover - compiled
    """Fields at or above ``size`` are rejected; ``table`` is zero-padded to 2**bits so a
    word's fields are gathered without branches, and only a word holding more accepted
    fields than the row still needs is walked field by field. Returns (total, still needed)."""
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits)
    per_word = 64 // bits
    total = table[0] * 0
    need = picks
    for w in range(buf.shape[0]):
        word = buf[w]
        part = table[0] * 0
        accepted = 0
        probe = word
        for _ in range(per_word):
            field = probe & mask
            probe >>= shift
            part += table[field]
            accepted += field < size
        if accepted <= need:
            total += part
            need -= accepted
        else:
            for _ in range(per_word):
                field = word & mask
                word >>= shift
                if field < size and need > 0:
                    total += table[field]
                    need -= 1
        if need == 0:
            break
    return total, need


@njit(nogil=True, cache=True)
def decode_words(words, table, picks, bits, size, words_per_row, out, short):  # pragma: no cover - compiled
    """Add each row's first ``picks`` accepted table entries to ``out[row]``, reading the row's
    ``words_per_row`` words of ``words``; ``short[row]`` is set when they hold too few.

    Fields are read low bits first, word after word; a field is accepted when it is below
    ``size``.
    """
    twelve = bits == 12 and size == 4096
    for row in range(out.shape[0]):
        buf = words[row * words_per_row:(row + 1) * words_per_row]
        if twelve:
            out[row] += _row_twelve_bit(buf, table, picks)
        else:
            total, need = _row_with_rejection(buf, table, picks, bits, size)
            out[row] += total
            short[row] |= need > 0
