"""Gathering generation requests from concurrent coroutines into batches.

The harness plays many episodes of a cell at once, each awaiting its seller's reply. A
``GenerationQueue`` collects the requests that arrive while the model is busy (or within a short
window after the first one) and runs them as one ``BatchGenerator.generate`` call in a worker
thread, so the event loop keeps serving the other episodes (scripted buyers, result writes)
meanwhile. Batches are formed at turn granularity: a request that arrives during a batch waits
for the next one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from negotiation.lm._generate import Generation, GenerationRequest


class GenerationQueue:
    """Batches ``submit`` calls for one generator (one queue per loaded model).

    Args:
        generator: an object with ``generate(list[GenerationRequest]) -> list[Generation]``
            (``BatchGenerator``).
        max_batch: most requests per batch.
        gather_s: how long the first request of a batch waits for others to join.
    """

    def __init__(self, generator: Any, *, max_batch: int = 64, gather_s: float = 0.005):
        if max_batch < 1 or gather_s < 0:
            raise ValueError(f"max_batch={max_batch}, gather_s={gather_s}: need max_batch >= 1 and gather_s >= 0")
        self.generator = generator
        self.max_batch = max_batch
        self.gather_s = gather_s
        self._pending: list[tuple[GenerationRequest, asyncio.Future[Generation]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []
        """Size of every batch run so far (for benchmarks and tests)."""

    async def submit(self, request: GenerationRequest) -> Generation:
        """Queue one request and wait for its generation (errors of its batch are raised here)."""
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        while self._pending:
            await asyncio.sleep(self.gather_s)
            batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            live = [(r, f) for r, f in batch if not f.done()]  # a cancelled waiter needs no tokens
            if not live:
                continue
            self.batch_sizes.append(len(live))
            try:
                results = await asyncio.to_thread(self.generator.generate, [r for r, _ in live])
            except Exception as exc:  # handed to every waiter of this batch, which re-raises it
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(live, results):
                if not future.done():
                    future.set_result(result)
