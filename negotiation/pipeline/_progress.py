"""Progress of long stages on stderr, so `dvc repro` is not silent for minutes (or, in the paper
study, hours of API calls): a rich bar with an ETA on a terminal, else an INFO log line at every
tenth of the work and at least every 30 s (CI logs, redirected output). ``$NEGO_PROGRESS=1``
forces the bar, ``0`` the log lines."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

log = logging.getLogger("negotiation.progress")
PROGRESS_ENV = "NEGO_PROGRESS"
LOG_EVERY_S = 30.0


def _use_bar() -> bool:
    forced = os.environ.get(PROGRESS_ENV)
    return forced == "1" if forced in ("0", "1") else sys.stderr.isatty()


def eta_text(elapsed_s: float, done: int, total: int) -> str:
    """``m:ss`` left at the rate so far; ``?`` before the first unit is done."""
    if done <= 0 or total <= 0:
        return "?"
    left = max(0.0, elapsed_s / done * (total - done))
    return f"{int(left // 60)}:{int(left % 60):02d}"


class StageProgress:
    """``with StageProgress("evaluate arm", unit="episodes") as p: p.update(done, total, "errors 0")``."""

    def __init__(self, description: str, *, unit: str):
        self.description, self.unit = description, unit
        self._bar: Any = None
        self._task: Any = None
        self._t0 = time.monotonic()
        self._last_log, self._last_decile = 0.0, -1

    def __enter__(self) -> StageProgress:
        if _use_bar():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn(self.unit), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 TextColumn("{task.fields[stats]}"), console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=None, stats="")
        return self

    def update(self, done: int, total: int, stats: str = "") -> None:
        """``done`` of ``total`` units; ``stats`` is shown beside the count."""
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, stats=stats)
            return
        now = time.monotonic()
        decile = int(10 * done / total) if total else 0
        if decile > self._last_decile or now - self._last_log >= LOG_EVERY_S or done == total:
            self._last_decile, self._last_log = decile, now
            log.info("%s: %d/%d %s, %s, ETA %s", self.description, done, total, self.unit, stats,
                     eta_text(now - self._t0, done, total))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
