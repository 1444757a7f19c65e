"""Exact Pareto frontier of a separable bargaining problem over full contracts.

In Ũ space every term contributes independently (docs/analysis.md derives this):
a continuous term is a linear transfer — seller ``w_s·s``, buyer ``w_b·(1 − s)`` for a
share ``s ∈ [0, 1]`` — and an integrative term on which the parties prefer different
levels is a choice between ``(w_s, 0)`` and ``(0, w_b)``; every other term adds a
constant. The achievable set is therefore the union, over the discrete choices, of
translates of one zonotope (the sum of the transfer segments), whose upper-right
boundary is a concave chain: give terms to the seller in increasing order of
``w_b / w_s``. The frontier is the upper envelope of these translated chains, made
monotone: the boundary of the free-disposal hull, a staircase whose horizontal and
vertical connectors bridge the gaps between translates. All breakpoints of the
envelope are chain vertices or crossings of two chains, so it is exact, with no grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MERGE_TOLERANCE = 1e-12
"""Candidate breakpoints closer than this are one breakpoint (rounding, not geometry)."""


@dataclass(frozen=True)
class Problem:
    """A bargaining problem in Ũ space.

    Attributes:
      constant: ``(2,)`` seller and buyer Ũ of the terms without conflict.
      transfers: ``(n, 2)`` ``(w_s, w_b)`` of conflicting continuous terms, both > 0.
      choices: ``(m, 2)`` ``(w_s, w_b)`` of integrative terms the parties want set
        differently, both > 0.
      options: per term of a profiled domain with a third undominated level, ``(k, 2)`` the
        ``(w_s e_s, w_b e_b)`` of each of its undominated levels (one is set).
    """

    constant: np.ndarray
    transfers: np.ndarray
    choices: np.ndarray
    options: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class Allocation:
    """A full contract in problem terms: who wins each choice, and each transfer's share."""

    seller_choices: tuple[bool, ...]
    """Per choice: True when the seller's preferred level is set."""
    seller_shares: tuple[float, ...]
    """Per transfer: the seller's share ``s ∈ [0, 1]``."""
    option_picks: tuple[int, ...] = ()
    """Per options term: the row of ``Problem.options`` set."""


@dataclass(frozen=True)
class Frontier:
    """Staircase polyline of the free-disposal hull, vertices sorted by seller Ũ.

    Attributes:
      vertices: ``(V, 2)`` [seller Ũ, buyer Ũ].
      achievable: ``(V,)`` witness allocation of each vertex, or None for the corner of
        a connector (a point no full contract reaches).
      segment_achievable: ``(V − 1,)`` True where every point of the segment is reached
        by a full contract (False on connectors).
      segment_chain: ``(V − 1,)`` the chain an achievable segment lies on (−1: connector).
    """

    vertices: np.ndarray
    achievable: tuple[Allocation | None, ...]
    segment_achievable: np.ndarray
    segment_chain: np.ndarray
    chains: "_Chains"
    num_transfers: int

    def allocation_on_segment(self, segment: int, x: float) -> Allocation:
        """The contract at seller Ũ ``x`` on achievable segment ``segment`` (one chain piece)."""
        return _allocation(self.chains, int(self.segment_chain[segment]), x, self.num_transfers)


@dataclass(frozen=True)
class _Chains:
    """The translated chains: chain p is ``offsets[p] + (chain_x, chain_y)``."""

    offsets: np.ndarray  # (K, 2)
    masks: np.ndarray  # (K, m) bool: which choices the seller wins
    picks: np.ndarray  # (K, q) int: the row set of each options term
    chain_x: np.ndarray  # (n + 1,) seller coordinate of the zonotope chain's vertices
    chain_y: np.ndarray  # (n + 1,) buyer coordinate
    order: np.ndarray  # (n,) transfer indices in the order they move to the seller


def _pareto_choices(choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-dominated sums over all 2^m choice outcomes; dominated ones never reach the frontier."""
    m = len(choices)
    masks = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
    points = np.stack([masks @ choices[:, 0], (~masks) @ choices[:, 1]], axis=1)
    keep = _undominated(points)
    return points[keep], masks[keep]


def _undominated(points: np.ndarray) -> np.ndarray:
    """Indices of the points no other point weakly dominates, by increasing seller value."""
    order = np.lexsort((-points[:, 1], -points[:, 0]))
    keep, best_y = [], -np.inf
    for index in order:
        if points[index, 1] > best_y:
            keep.append(index)
            best_y = points[index, 1]
    return np.array(keep[::-1])


def _with_options(points: np.ndarray, masks: np.ndarray,
                  options: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each options term added to the choice sums one at a time (every row against every point),
    pruned to the undominated sums after each: exact, since a dominated offset's translate of
    the transfer zonotope is dominated too."""
    picks = np.zeros((len(points), 0), dtype=int)
    for rows in options:
        k = len(rows)
        points = (points[:, None, :] + rows[None, :, :]).reshape(-1, 2)
        masks = np.repeat(masks, k, axis=0)
        picks = np.column_stack([np.repeat(picks, k, axis=0), np.tile(np.arange(k), len(picks))])
        keep = _undominated(points)
        points, masks, picks = points[keep], masks[keep], picks[keep]
    return points, masks, picks


def _chains(problem: Problem) -> _Chains:
    points, masks = _pareto_choices(problem.choices)
    points, masks, picks = _with_options(points, masks, problem.options)
    transfers = problem.transfers
    order = np.argsort(transfers[:, 1] / transfers[:, 0], kind="stable")
    chain_x = np.concatenate([[0.0], np.cumsum(transfers[order, 0])])
    chain_y = transfers[:, 1].sum() - np.concatenate([[0.0], np.cumsum(transfers[order, 1])])
    return _Chains(points + problem.constant, masks, picks, chain_x, chain_y, order)


def _values(chains: _Chains, xs: np.ndarray) -> np.ndarray:
    """``(len(xs), K)`` buyer value of each chain at each seller value (−inf off its span)."""
    local = xs[:, None] - chains.offsets[None, :, 0]
    inside = (local >= -MERGE_TOLERANCE) & (local <= chains.chain_x[-1] + MERGE_TOLERANCE)
    if len(chains.chain_x) == 1:
        values = np.broadcast_to(chains.chain_y[0], local.shape)
    else:
        values = np.interp(local.ravel(), chains.chain_x, chains.chain_y).reshape(local.shape)
    return np.where(inside, values + chains.offsets[None, :, 1], -np.inf)


def _breakpoints(chains: _Chains) -> np.ndarray:
    """Chain vertices and every crossing of two chain segments, sorted and merged."""
    xs = (chains.offsets[:, None, 0] + chains.chain_x[None, :]).ravel()
    if len(chains.chain_x) > 1 and len(chains.offsets) > 1:
        left_x = (chains.offsets[:, None, 0] + chains.chain_x[None, :-1]).ravel()
        right_x = (chains.offsets[:, None, 0] + chains.chain_x[None, 1:]).ravel()
        left_y = (chains.offsets[:, None, 1] + chains.chain_y[None, :-1]).ravel()
        slope = np.tile(np.diff(chains.chain_y) / np.diff(chains.chain_x), len(chains.offsets))
        i, j = np.triu_indices(len(slope), k=1)
        parallel = np.isclose(slope[i], slope[j], rtol=0, atol=1e-15)
        intercept = left_y - slope * left_x
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = (intercept[j] - intercept[i]) / (slope[i] - slope[j])
        low = np.maximum(left_x[i], left_x[j])
        high = np.minimum(right_x[i], right_x[j])
        hit = ~parallel & (cross >= low) & (cross <= high)
        xs = np.concatenate([xs, cross[hit]])
    xs = np.sort(xs)
    return xs[np.concatenate([[True], np.diff(xs) > MERGE_TOLERANCE])]


def _allocation(chains: _Chains, chain: int, x: float, num_transfers: int) -> Allocation:
    """The full contract behind seller value ``x`` on chain ``chain``."""
    local = min(max(x - chains.offsets[chain, 0], 0.0), chains.chain_x[-1])
    shares = np.zeros(num_transfers)
    gains = np.diff(chains.chain_x)
    for rank, transfer in enumerate(chains.order):
        given = min(max(local - chains.chain_x[rank], 0.0), gains[rank])
        shares[transfer] = given / gains[rank]
    return Allocation(tuple(bool(b) for b in chains.masks[chain]), tuple(float(s) for s in shares),
                      tuple(int(i) for i in chains.picks[chain]))


class _Staircase:
    """Vertices collected right to left; a vertex closer than the tolerance merges."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float, Allocation | None]] = []
        self.segments: list[int] = []  # chain of an achievable segment, -1 for a connector

    def add(self, x: float, y: float, allocation: Allocation | None, segment_chain: int) -> None:
        if self.points:
            last_x, last_y, last_allocation = self.points[-1]
            if abs(last_x - x) <= MERGE_TOLERANCE and abs(last_y - y) <= MERGE_TOLERANCE:
                self.points[-1] = (last_x, last_y, last_allocation or allocation)
                return
            self.segments.append(segment_chain)
        self.points.append((x, y, allocation))

    def _drop_collinear(self) -> None:
        """Remove a vertex between two pieces of the same chain that are one straight line."""
        keep_points, keep_segments = [self.points[0]], []
        for index in range(1, len(self.points)):
            chain = self.segments[index - 1]
            if keep_segments and index < len(self.points) and keep_segments[-1] == chain >= 0:
                (x0, y0, _), (x1, y1, _), (x2, y2, _) = keep_points[-2], keep_points[-1], self.points[index]
                if abs((x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0)) <= MERGE_TOLERANCE:
                    keep_points[-1] = self.points[index]
                    continue
            keep_points.append(self.points[index])
            keep_segments.append(chain)
        self.points, self.segments = keep_points, keep_segments

    def frontier(self, chains: _Chains, num_transfers: int) -> Frontier:
        self._drop_collinear()
        points = self.points[::-1]
        vertices = np.array([[x, y] for x, y, _ in points], dtype=float)
        segment_chain = np.array(self.segments[::-1], dtype=int)
        return Frontier(vertices, tuple(a for _, _, a in points), segment_chain >= 0, segment_chain, chains,
                        num_transfers)


def _chain_value(chains: _Chains, chain: int, x: float) -> float:
    local = x - chains.offsets[chain, 0]
    return float(np.interp(local, chains.chain_x, chains.chain_y) + chains.offsets[chain, 1])


def pareto_frontier(problem: Problem) -> Frontier:
    """The exact frontier: envelope of the translated chains, swept right to left.

    Going left, ``level`` is the best buyer Ũ reached at or right of the sweep. A chain
    piece above ``level`` is efficient from where it crosses ``level`` (joined by a
    horizontal connector) to its left end; a point value above both (a chain's end)
    adds a vertical connector.
    """
    chains = _chains(problem)
    num_transfers = len(problem.transfers)
    xs = _breakpoints(chains)
    point_values = _values(chains, xs)
    point_chain = point_values.argmax(axis=1)
    point_best = point_values.max(axis=1)
    mid_values = _values(chains, (xs[:-1] + xs[1:]) / 2) if len(xs) > 1 else np.empty((0, len(chains.offsets)))
    stairs = _Staircase()
    allocate = lambda chain, x: _allocation(chains, int(chain), float(x), num_transfers)  # noqa: E731
    stairs.add(xs[-1], point_best[-1], allocate(point_chain[-1], xs[-1]), -1)
    level = point_best[-1]
    for i in range(len(xs) - 2, -1, -1):
        if np.isfinite(mid_values[i].max()):
            chain = int(mid_values[i].argmax())
            left, right = _chain_value(chains, chain, xs[i]), _chain_value(chains, chain, xs[i + 1])
            if left > level + MERGE_TOLERANCE:
                cross = xs[i + 1] if right >= level - MERGE_TOLERANCE else xs[i] + (level - left) * (
                    xs[i + 1] - xs[i]) / (right - left)
                stairs.add(cross, level, allocate(chain, cross), -1)
                stairs.add(xs[i], left, allocate(chain, xs[i]), chain)
                level = left
        if point_best[i] > level + MERGE_TOLERANCE:
            stairs.add(xs[i], level, None, -1)
            stairs.add(xs[i], point_best[i], allocate(point_chain[i], xs[i]), -1)
            level = point_best[i]
    return stairs.frontier(chains, num_transfers)
