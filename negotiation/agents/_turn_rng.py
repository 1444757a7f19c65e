"""The per-turn random stream of templated prose, without numpy's construction cost.

Scripted and policy agents vary their prose with ``numpy.random.default_rng([sample_seed,
turn, salt])``: a ``SeedSequence`` mixes the three words, seeds a ``PCG64`` and a few draws
pick the sentences. Building that generator costs about 28 µs, more than everything else a
scripted turn does. ``TurnRandom`` computes the same numbers in plain Python from the same
published algorithms (numpy's ``SeedSequence`` hash mixing, PCG64 XSL-RR with its 32-bit
buffering, Lemire's bounded integers, 53-bit doubles), so transcripts stay byte for byte what
numpy gives; ``tests/agents/test_turn_rng.py`` checks it against numpy itself.
Only one to four entropy words, each in [0, 2**32), take this path; anything else uses numpy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_DOUBLE = 1.0 / 9007199254740992.0


def _hash_constants(init: int, mult: int, n: int) -> tuple[tuple[int, int], ...]:
    """The (xor, multiply) constant pairs of ``n`` successive hashmix steps: numpy's hash
    constant advances the same way whatever the data, so it is computed once."""
    pairs, const = [], init
    for _ in range(n):
        nxt = (const * mult) & _M32
        pairs.append((const, nxt))
        const = nxt
    return tuple(pairs)


_CROSS = tuple((i_src, i_dst) for i_src in range(_POOL) for i_dst in range(_POOL) if i_src != i_dst)
_MIX_A = _hash_constants(_INIT_A, _MULT_A, _POOL + len(_CROSS))
_GEN_B = _hash_constants(_INIT_B, _MULT_B, 8)


# The cross-mixing steps of numpy's mix_entropy, each with its hash constants, flattened.
_CROSS_STEPS = tuple((src, dst, pre, post) for (src, dst), (pre, post) in zip(_CROSS, _MIX_A[_POOL:]))
# The first source word's steps (0 -> 1, 2, 3) and the rest.
_FIRST_STEPS, _LATER_STEPS = _CROSS_STEPS[:_POOL - 1], _CROSS_STEPS[_POOL - 1:]
# Pool words after the first source's steps, all but word 1 (the turn, for the agents), by the
# entropy words other than word 1: an episode's turns share them, so they are mixed once.
_FIRST_STAGE: dict[tuple[int, int, int], tuple[int, int, int, int]] = {}
_MAX_STAGES = 4096


def _hashmix(value: int, pre: int, post: int) -> int:
    value = ((value ^ pre) * post) & _M32
    return value ^ (value >> 16)


def _mix(dst: int, hashed: int) -> int:
    mixed = (_MIX_L * dst - _MIX_R * hashed) & _M32
    return mixed ^ (mixed >> 16)


def _first_stage(w0: int, w2: int, w3: int) -> tuple[int, int, int, int]:
    """``(pool[0], the hash of pool[0] step 0 -> 1 mixes into word 1, pool[2], pool[3])`` after the
    first source's steps: none of it depends on word 1."""
    hit = _FIRST_STAGE.get((w0, w2, w3))
    if hit is None:
        p0 = _hashmix(w0, *_MIX_A[0])
        (_, _, pre1, post1), (_, _, pre2, post2), (_, _, pre3, post3) = _FIRST_STEPS
        p2 = _mix(_hashmix(w2, *_MIX_A[2]), _hashmix(p0, pre2, post2))
        p3 = _mix(_hashmix(w3, *_MIX_A[3]), _hashmix(p0, pre3, post3))
        if len(_FIRST_STAGE) >= _MAX_STAGES:
            _FIRST_STAGE.clear()
        hit = _FIRST_STAGE[(w0, w2, w3)] = (p0, _hashmix(p0, pre1, post1), p2, p3)
    return hit


# The constants of the later steps, by source word then destination (1 -> 0, 2, 3; 2 -> 0, 1, 3;
# 3 -> 0, 1, 2), for _pool's unrolled loop.
((_, _, _K10, _L10), (_, _, _K12, _L12), (_, _, _K13, _L13), (_, _, _K20, _L20), (_, _, _K21, _L21),
 (_, _, _K23, _L23), (_, _, _K30, _L30), (_, _, _K31, _L31), (_, _, _K32, _L32)) = _LATER_STEPS


def _pool(entropy: Sequence[int]) -> list[int]:
    """``SeedSequence(entropy).pool`` for at most four words < 2**32 (numpy's ``mix_entropy``).

    The nine steps after the first source's are unrolled on local names (each hashes the source
    word and mixes it into the destination): a loop over the step table spent a third of its
    time indexing the pool and unpacking the table, and this runs every turn.
    """
    w0, w1, w2, w3 = list(entropy) + [0] * (_POOL - len(entropy))
    p0, hashed0, p2, p3 = _first_stage(w0, w2, w3)
    m32, mix_l, mix_r = _M32, _MIX_L, _MIX_R
    p1 = _mix(_hashmix(w1, *_MIX_A[1]), hashed0)
    h = ((p1 ^ _K10) * _L10) & m32
    v = (mix_l * p0 - mix_r * (h ^ (h >> 16))) & m32
    p0 = v ^ (v >> 16)
    h = ((p1 ^ _K12) * _L12) & m32
    v = (mix_l * p2 - mix_r * (h ^ (h >> 16))) & m32
    p2 = v ^ (v >> 16)
    h = ((p1 ^ _K13) * _L13) & m32
    v = (mix_l * p3 - mix_r * (h ^ (h >> 16))) & m32
    p3 = v ^ (v >> 16)
    h = ((p2 ^ _K20) * _L20) & m32
    v = (mix_l * p0 - mix_r * (h ^ (h >> 16))) & m32
    p0 = v ^ (v >> 16)
    h = ((p2 ^ _K21) * _L21) & m32
    v = (mix_l * p1 - mix_r * (h ^ (h >> 16))) & m32
    p1 = v ^ (v >> 16)
    h = ((p2 ^ _K23) * _L23) & m32
    v = (mix_l * p3 - mix_r * (h ^ (h >> 16))) & m32
    p3 = v ^ (v >> 16)
    h = ((p3 ^ _K30) * _L30) & m32
    v = (mix_l * p0 - mix_r * (h ^ (h >> 16))) & m32
    p0 = v ^ (v >> 16)
    h = ((p3 ^ _K31) * _L31) & m32
    v = (mix_l * p1 - mix_r * (h ^ (h >> 16))) & m32
    p1 = v ^ (v >> 16)
    h = ((p3 ^ _K32) * _L32) & m32
    v = (mix_l * p2 - mix_r * (h ^ (h >> 16))) & m32
    p2 = v ^ (v >> 16)
    return [p0, p1, p2, p3]


def _state_words(pool: list[int]) -> list[int]:
    """``generate_state(8, uint32)`` of the pool."""
    out = []
    for word, (pre, post) in zip(pool + pool, _GEN_B):
        value = ((word ^ pre) * post) & _M32
        out.append(value ^ (value >> 16))
    return out


def _pcg_seed(pool: list[int]) -> tuple[int, int]:
    """PCG64's ``(state, inc)`` seeded from ``_state_words(pool)``.

    ``generate_state(4, uint64)`` pairs the little-endian words; PCG64 takes (seed_hi, seed_lo,
    inc_hi, inc_lo) and seeds as srandom does: state = 0, step, add the seed, step.
    """
    w0, w1, w2, w3, w4, w5, w6, w7 = _state_words(pool)
    seed = (w1 << 96) | (w0 << 64) | (w3 << 32) | w2
    inc = (((w5 << 96) | (w4 << 64) | (w7 << 32) | w6) << 1 | 1) & _M128
    return ((inc + seed) * _PCG_MULT + inc) & _M128, inc


class TurnRandom:
    """The draws ``numpy.random.default_rng(entropy)`` makes, for ``integers(n)`` and ``random()``."""

    __slots__ = ("_state", "_inc", "_spare", "_numpy")

    def __init__(self, entropy: Sequence[int]):
        words = list(map(int, entropy))
        self._numpy = None
        self._spare: int | None = None
        if not words or len(words) > _POOL or min(words) < 0 or max(words) > _M32:
            self._numpy = np.random.default_rng(words)
            return
        self._state, self._inc = _pcg_seed(_pool(words))

    def _next64(self) -> int:
        state = (self._state * _PCG_MULT + self._inc) & _M128
        self._state = state
        value = ((state >> 64) ^ state) & _M64
        rot = state >> 122
        return ((value >> rot) | (value << (64 - rot))) & _M64

    def _next32(self) -> int:
        spare = self._spare
        if spare is not None:
            self._spare = None
            return spare
        state = (self._state * _PCG_MULT + self._inc) & _M128  # _next64, inlined: every draw is one
        self._state = state
        value = ((state >> 64) ^ state) & _M64
        rot = state >> 122
        value = ((value >> rot) | (value << (64 - rot))) & _M64
        self._spare = value >> 32
        return value & _M32

    def integers(self, high: int) -> int:
        """``Generator.integers(high)``: uniform on ``[0, high)`` (Lemire's method on 32 bits)."""
        if self._numpy is not None:
            return int(self._numpy.integers(high))
        high = int(high)
        if high <= 0:
            raise ValueError(f"high must be positive, got {high}")
        if high == 1:
            return 0
        if high - 1 >= _M32:
            if high - 1 > _M32:
                raise ValueError(f"high must be at most 2**32 here, got {high}")
            return self._next32()
        m = self._next32() * high
        leftover = m & _M32
        if leftover < high:
            threshold = (_M32 - (high - 1)) % high
            while leftover < threshold:
                m = self._next32() * high
                leftover = m & _M32
        return m >> 32

    def random(self) -> float:
        """``Generator.random()``: a double in [0, 1) from the top 53 bits of one 64-bit draw."""
        if self._numpy is not None:
            return float(self._numpy.random())
        return (self._next64() >> 11) * _DOUBLE
