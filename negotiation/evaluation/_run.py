"""One evaluation run, as the CLI and the DVC ``evaluate`` stage both call it.

``evaluate_cell``: lock the output folder, run the pilot gate per buyer (unless disabled),
run or resume the full cell for the buyers that may proceed, compact the shards into
``episodes.parquet`` / ``turns.parquet``, and write ``accounting.json`` (per-arm tokens, $,
retries) and ``sampling.json`` (per agent: requested, sent, not sent, refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents._llm_retry import RetryPolicy
from negotiation.agents._llm_sampling import SamplingRole
from negotiation.agents._llm_secrets import redact_obj
from negotiation.agents._llm_vllm import ServeSettings
from negotiation.evaluation._accounting import arm_accounting, write_accounting, write_json
from negotiation.evaluation._cell import AgentFactory, CellProgress, CellSpec, run_cell
from negotiation.evaluation._pilot import GateRule, PilotResult, run_pilot
from negotiation.evaluation._setup import agent_factory, env_config
from negotiation.evaluation._store import ResultsStore


class RunOptions(BaseModel):
    """Knobs of one run that are not part of the protocol (``params.yaml`` / CLI)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = 1
    """Options format version."""
    concurrency: int = Field(default=16, gt=0)
    """Episodes in flight."""
    max_concurrency: int = Field(default=64, gt=0)
    """Requests in flight per endpoint."""
    retry_errors: bool = False
    """Rerun keys whose latest attempt is an error row."""
    pilot: bool = True
    """Run the pilot gate before the full cell."""
    deviation: int | None = Field(default=None, ge=1)
    """Logged deviation that covers a failed pilot gate (the cell then runs; the audit checks it)."""
    retry: RetryPolicy = RetryPolicy()
    """Retry policy of LLM calls."""


@dataclass
class EvaluationResult:
    """What a run produced."""

    out: Path
    progress: CellProgress
    episodes: pd.DataFrame
    turns: pd.DataFrame
    pilot: dict[str, PilotResult] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    """Buyers whose pilot gate stopped them."""
    accounting: dict[str, Any] = field(default_factory=dict)

    @property
    def error_rows(self) -> int:
        return 0 if self.episodes.empty else int((self.episodes["outcome"] == "error").sum())

    @property
    def ok(self) -> bool:
        """No error rows and no blocked cell."""
        return self.error_rows == 0 and not self.blocked


def _recording(factory: AgentFactory, records: dict[str, Any]) -> AgentFactory:
    def build(spec: str, role: str) -> Any:
        agent = factory(spec, role)
        record = getattr(agent, "record", None)
        if record is not None:
            records[f"{role}:{spec}"] = {**record.model_dump(), "accepted": record.accepted}
        return agent

    return build


def _write_sampling(out: Path, records: dict[str, Any]) -> None:
    if not records:
        return
    path = out / "sampling.json"
    existing = json.loads(path.read_text(encoding="utf-8")).get("agents", {}) if path.is_file() else {}
    write_json(path, {"version": 1, "agents": redact_obj({**existing, **records})})


async def evaluate_cell(cell: CellSpec, out: Path | str, protocol: Any, *, options: RunOptions = RunOptions(),
                        seller_sampling: SamplingRole | None = None, serve: ServeSettings | None = None,
                        make_agent: AgentFactory | None = None,
                        on_progress: Callable[[str, CellProgress], None] | None = None) -> EvaluationResult:
    """Pilot, run or resume, compact and account one cell into ``out``.

    Args:
        cell: the cell (``build_cell`` fills the protocol's defaults).
        out: results folder; several cells (arms) may share it.
        protocol: the loaded study protocol (environment, sampling, pilot gate).
        options: run knobs.
        seller_sampling: the seller's sampling setting (by arm kind; default by agent kind).
        serve: ``vllm serve`` settings for a ``vllm:`` seller (default: from its spec).
        make_agent: replaces the protocol-driven agent factory (tests).
        on_progress: ``(phase, progress)`` after each stored episode; phase is ``pilot`` or ``cell``.
    """
    out = Path(out)
    store = ResultsStore(out)
    env = env_config(protocol, "evaluation")
    records: dict[str, Any] = {}
    factory = _recording(make_agent or agent_factory(protocol, retry=options.retry,
                                                     max_concurrency=options.max_concurrency,
                                                     seller_sampling=seller_sampling, serve=serve), records)
    with store.lock():
        pilot: dict[str, PilotResult] = {}
        buyers = sorted(cell.buyers)
        if options.pilot:
            pilot = await run_pilot(cell, GateRule.from_protocol(protocol), out, env, factory,
                                    concurrency=options.concurrency, retry_errors=options.retry_errors,
                                    deviation=options.deviation)
            buyers = [b for b in buyers if pilot[b].proceeds]
        blocked = sorted(set(cell.buyers) - set(buyers))
        progress = CellProgress()
        if buyers:
            progress = await run_cell(cell, store, env, factory, concurrency=options.concurrency,
                                      retry_errors=options.retry_errors, buyers=buyers,
                                      on_progress=(lambda p: on_progress("cell", p)) if on_progress else None)
        episodes, turns = store.compact()
        write_accounting(out, episodes)
        _write_sampling(out, records)
    return EvaluationResult(out, progress, episodes, turns, pilot, blocked, arm_accounting(episodes))
