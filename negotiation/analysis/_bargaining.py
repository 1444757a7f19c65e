"""Nash point, maximum welfare and distances on the exact frontier; scenarios as problems.

Shapes: ``points`` are ``(N, 2)`` arrays of [seller Ũ, buyer Ũ]. Disagreement is
Ũ = (0, 0), so the Nash point maximises ``Ũ_s·Ũ_b`` over full contracts.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from negotiation.analysis._frontier import Allocation, Frontier, Problem


def nash_point(frontier: Frontier) -> tuple[np.ndarray, Allocation]:
    """Maximiser of ``x·y`` over the achievable part of the frontier, with its contract.

    On an achievable segment ``y = y0 + k(x − x0)`` (k < 0) the product is a concave
    quadratic with its peak at ``x* = (k·x0 − y0) / (2k)``, clipped to the segment.
    """
    best, best_point, best_allocation = -np.inf, None, None
    vertices = frontier.vertices
    for index, allocation in enumerate(frontier.achievable):
        if allocation is not None and vertices[index].prod() > best:
            best, best_point, best_allocation = vertices[index].prod(), vertices[index], allocation
    for index in np.flatnonzero(frontier.segment_achievable):
        (x0, y0), (x1, y1) = vertices[index], vertices[index + 1]
        if x1 <= x0:
            continue
        slope = (y1 - y0) / (x1 - x0)
        peak = min(max((slope * x0 - y0) / (2 * slope), x0), x1) if slope < 0 else x1
        point = np.array([peak, y0 + slope * (peak - x0)])
        if point.prod() > best:
            best, best_point = point.prod(), point
            best_allocation = frontier.allocation_on_segment(int(index), float(peak))
    return np.asarray(best_point, dtype=float), best_allocation


def max_welfare(problem: Problem) -> float:
    """Largest ``Ũ_s + Ũ_b``: each transfer and each choice goes to the heavier party, each
    options term to its level of largest sum."""
    options = sum(float(rows.sum(axis=1).max()) for rows in problem.options)
    return float(problem.constant.sum() + problem.transfers.max(axis=1).sum() + problem.choices.max(axis=1).sum()
                 + options)


def frontier_height(frontier: Frontier, x: np.ndarray) -> np.ndarray:
    """Free-disposal frontier's buyer Ũ above seller Ũ ``x`` (−inf right of its end)."""
    vertices = frontier.vertices
    # Along a staircase the buyer value is non-increasing, so the height at x is the
    # largest buyer value of any frontier point at or right of x.
    xs, ys = vertices[:, 0], vertices[:, 1]
    heights = np.full(len(x), -np.inf)
    for index in range(len(vertices) - 1):
        (x0, y0), (x1, y1) = vertices[index], vertices[index + 1]
        inside = (x >= x0) & (x <= x1)
        value = y0 if x1 == x0 else y0 + (y1 - y0) * (x[inside] - x0) / (x1 - x0)
        heights[inside] = np.maximum(heights[inside], value)
    heights = np.where(x < xs[0], ys[0], heights)
    return heights


def signed_distance(frontier: Frontier, points: np.ndarray) -> np.ndarray:
    """Euclidean distance from each point to the frontier polyline.

    Positive inside the free-disposal hull (the deal is dominated), negative beyond it:
    a ledger that leaves a contested integrative term unnamed scores both parties half
    its weight, a lottery-like point no full contract reaches.
    """
    points = np.atleast_2d(np.asarray(points, dtype=float))
    start, end = frontier.vertices[:-1], frontier.vertices[1:]
    if len(start) == 0:
        distance = np.linalg.norm(points - frontier.vertices[0], axis=1)
    else:
        direction = end - start
        length2 = np.maximum((direction**2).sum(axis=1), 1e-300)
        offset = points[:, None, :] - start[None, :, :]
        t = np.clip((offset * direction[None]).sum(axis=2) / length2[None], 0.0, 1.0)
        nearest = start[None] + t[..., None] * direction[None]
        distance = np.linalg.norm(points[:, None, :] - nearest, axis=2).min(axis=1)
    beyond = points[:, 1] > frontier_height(frontier, points[:, 0]) + 1e-12
    return np.where(beyond, -distance, distance)


class ScenarioFrontier(BaseModel):
    """The frontier summary of one scenario, as ``nego frontier --json`` prints it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    domain: str
    """Domain name."""
    seed: int
    """Scenario seed."""
    pareto: list[tuple[float, float]]
    """Frontier vertices [seller Ũ, buyer Ũ] sorted by seller Ũ; the frontier is the polyline."""
    nash: tuple[float, float]
    """Nash bargaining point [seller Ũ, buyer Ũ] (disagreement at (0, 0))."""
    nash_contract: dict[str, Any]
    """A full contract that reaches the Nash point."""
    max_welfare: float
    """Largest seller Ũ + buyer Ũ over full contracts."""
