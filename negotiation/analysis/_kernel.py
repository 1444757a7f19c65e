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
    if size == 1 << bits:
        _decode_all_accepted(words, table, picks, bits, words_per_row, out)
    else:
        _decode_with_rejection(words, table, picks, bits, size, words_per_row, out, short)
