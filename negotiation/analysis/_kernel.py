"""The numba decoder of ``_resample`` (imported only when numba is installed)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _decode_all_accepted(words, table, picks, bits, words_per_row, out):  # pragma: no cover - compiled
    """Table size is exactly 2**bits, so every field is a pick: no acceptance test."""
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits)
    per_word = 64 // bits
    for row in range(out.shape[0]):
        base = row * words_per_row
        total = out[row]
        left = picks
        for w in range(words_per_row):
            word = words[base + w]
            take = min(per_word, left)
            # Two interleaved partial sums halve the chain of dependent additions.
            even = table[0] * 0
            odd = table[0] * 0
            for _ in range(take // 2):
                even += table[word & mask]
                odd += table[(word >> shift) & mask]
                word >>= shift + shift
            if take % 2:
                even += table[word & mask]
            total += even + odd
            left -= take
        out[row] = total


@njit(nogil=True, cache=True)
def _decode_twelve_bit(words, table, picks, words_per_row, out):  # pragma: no cover - compiled
    """``_decode_all_accepted`` for 12-bit fields (tables of 4,096 sums: 64 seeds in pairs,
    16 in triples, 8 in quadruples), unrolled five fields per word so the compiler sees
    independent loads and two short addition chains."""
    mask = np.uint64(0xFFF)
    s1, s2, s3, s4 = np.uint64(12), np.uint64(24), np.uint64(36), np.uint64(48)
    full_words = picks // 5
    rest = picks - 5 * full_words
    for row in range(out.shape[0]):
        base = row * words_per_row
        even = table[0] * 0
        odd = table[0] * 0
        for w in range(full_words):
            word = words[base + w]
            even += table[word & mask] + table[(word >> s2) & mask] + table[(word >> s4) & mask]
            odd += table[(word >> s1) & mask] + table[(word >> s3) & mask]
        if rest:
            word = words[base + full_words]
            for _ in range(rest):
                even += table[word & mask]
                word >>= s1
        out[row] += even + odd


@njit(nogil=True, cache=True)
def _decode_with_rejection(words, table, picks, bits, size, words_per_row, out, short):  # pragma: no cover
    """Fields at or above ``size`` are rejected; ``table`` is zero-padded to 2**bits so a
    word's fields are gathered without branches, and only a word holding more accepted
    fields than the row still needs is walked field by field."""
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits)
    per_word = 64 // bits
    for row in range(out.shape[0]):
        base = row * words_per_row
        total = out[row]
        need = picks
        for w in range(words_per_row):
            word = words[base + w]
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
        out[row] = total
        short[row] |= need > 0


def decode_rows(words, table, picks, bits, size, words_per_row, out, short):
    """Add each row's first ``picks`` accepted table entries to ``out[row]``.

    Fields are read low bits first, word after word; a field is accepted when it is
    below ``size``; ``short[row]`` is set when the row's words hold too few.
    """
    if size == 1 << bits and bits == 12:
        _decode_twelve_bit(words, table, picks, words_per_row, out)
    elif size == 1 << bits:
        _decode_all_accepted(words, table, picks, bits, words_per_row, out)
    else:
        _decode_with_rejection(words, table, picks, bits, size, words_per_row, out, short)
