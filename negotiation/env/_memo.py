"""The one admission rule of the text path's memos: store an entry the second time its key is met.

The parser, the utility sums and the scripted offers memoize pure functions that templated
agents call with the same inputs turn after turn. A memo entry is kept alive, so storing every
one-off key (a ledger met once) made the garbage collector run more often and promote live
episode objects into full passes; a key's hash is an int, which the collector does not track.
"""

from __future__ import annotations

__all__ = ["SecondSight"]


class SecondSight:
    """Hashes of keys met once, at most ``limit`` of them (then it starts over)."""

    __slots__ = ("_seen", "_limit")

    def __init__(self, limit: int) -> None:
        self._seen: set[int] = set()
        self._limit = limit

    def met_before(self, key_hash: int) -> bool:
        """Whether a key with this hash was met before (then its entry is worth storing);
        records it if not."""
        seen = self._seen
        if key_hash in seen:
            return True
        if len(seen) >= self._limit:
            seen.clear()
        seen.add(key_hash)
        return False
