"""Recording a CUDA graph as both fixed-shape generators do (``_static``, ``_slots``).

Two eager warm-up calls run first on a side stream, so lazy initialisation, allocation and
compilation happen there and not inside the graph; then one call is captured. The caller keeps
its own fallback: a step that cannot be captured raises here and runs eagerly there.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import torch

__all__ = ["record_graph"]

T = TypeVar("T")


def record_graph(step: Callable[[], T], *, warm: Callable[[], Any] | None = None,
                 pool: Any = None) -> tuple[Any, T]:
    """``(graph, output)``: ``step()`` captured after two calls of ``warm`` (default ``step``) on a
    side stream; ``pool`` a ``torch.cuda.graph_pool_handle()`` graphs that replay one at a time share."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            (warm or step)()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        out = step()
    return graph, out
