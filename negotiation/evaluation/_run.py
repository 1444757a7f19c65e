"""One evaluation run, as the CLI and the DVC ``evaluate`` stage both call it.

``evaluate_cell``: lock the output folder, run the pilot gate per buyer (unless disabled) and
write the audit's pilot record, run or resume the full cell for the buyers that may proceed,
compact the shards into ``episodes.parquet`` / ``turns.parquet``, and write ``accounting.json``
(per-arm tokens, $, retries), the audit's ``sampling.json`` (sent and accepted per agent) and
``sampling_detail.json`` (also what was not sent and why, and what the provider refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents import (RetryPolicy, SamplingRole, ServeSettings, agent_kind, default_sampling_role,
                                parse_spec, redact_obj)
from negotiation.evaluation._accounting import arm_accounting, write_accounting, write_json
from negotiation.evaluation._backend import ExecutionBackend
from negotiation.evaluation._cell import AgentFactory, AgentPool, CellProgress, CellSpec, prompt_hash_of, run_cell
from negotiation.evaluation._fingerprint import StoreFingerprint, adopt_fingerprint
from negotiation.evaluation._pilot import PilotResult, run_pilot
from negotiation.evaluation._setup import agent_factory, arm_sampling_role, build_cell, env_config
from negotiation.evaluation._records import pilot_record as pilot_record_of, sampling_record, write_redacted
from negotiation.evaluation._store import ResultsStore, _safe
from negotiation.evaluation._weights import seller_weights_sha256
from negotiation.study import ResultsLayout, Study


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
    backend: ExecutionBackend = ExecutionBackend()
    """Where the full cell's episodes are played (the pilot always runs here); same tables either way."""


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


def _write_details(out: Path, pool: AgentPool) -> None:
    """``sampling_detail.json``: every agent's full sampling record (requested, sent, refused)."""
    records = {f"{role}:{spec}": {**a.record.model_dump(), "accepted": a.record.accepted}
               for (spec, role), a in pool.agents.items()
               if pool.used(spec, role) is not None and getattr(a, "record", None) is not None}
    if not records:
        return
    path = out / "sampling_detail.json"
    existing = json.loads(path.read_text(encoding="utf-8")).get("agents", {}) if path.is_file() else {}
    write_json(path, {"version": 1, "agents": redact_obj({**existing, **records})})


def _write_sampling(out: Path, cell: CellSpec, pool: AgentPool, protocol_hash: str) -> None:
    """The audit's ``sampling.json`` from the agents this run used (kept when none ran)."""
    if pool.used(cell.seller, "seller") is None and (out / "sampling.json").is_file():
        return
    seller = pool.peek(cell.seller, "seller")
    buyers = {label: pool.peek(spec, "buyer") for label, spec in cell.buyers.items()}
    write_redacted(sampling_record(cell.study, cell.arm, seller, buyers, protocol_hash), out / "sampling.json")


def _seller_gpus(cell: CellSpec, serve: ServeSettings | None) -> int:
    """GPUs a served seller's actor reserves on a cluster: the serving tensor parallelism (from
    ``serve``, i.e. the protocol's size, else the spec's ``tp=``), 0 for sellers that are not served."""
    if not agent_kind(cell.seller).served:
        return 0
    return serve.tensor_parallel_size if serve is not None else parse_spec(cell.seller).option("tp", 1, int)


def cell_fingerprint(cell: CellSpec, pool: AgentPool, protocol: Any, protocol_hash: str,
                     seller_sampling: SamplingRole | None, seller_weights: str | None = None) -> StoreFingerprint:
    """The fingerprint of the episodes ``cell`` plays (agents are built, not started).

    ``seller_weights``: the hash of the seller's weights when known (the pipeline's
    ``seller.json``), else computed from the spec (``seller_weights_sha256``). The seller's
    sampling role is the one it plays with (by kind when not given), so the pipeline and a run by
    hand with the same spec name the same inputs."""
    agents = {f"seller:{cell.seller}": pool.peek(cell.seller, "seller")}
    agents.update({f"buyer:{spec}": pool.peek(spec, "buyer") for spec in cell.buyers.values()})
    planned = {name: {"requested": a.record.requested, "sent": a.record.sent}
               for name, a in sorted(agents.items()) if getattr(a, "record", None) is not None}
    role = seller_sampling or default_sampling_role(cell.seller, "seller")
    sampling = {"protocol": protocol.sampling.model_dump(mode="json"), "seller_role": role, "agents": planned}
    weights = seller_weights or seller_weights_sha256(cell.seller)
    return StoreFingerprint(seller=cell.seller, seller_weights_sha256=weights, buyers=dict(cell.buyers),
                            sampling=json.loads(json.dumps(sampling, default=str)), protocol_hash=protocol_hash,
                            prompt_hash=prompt_hash_of(*agents.values()))


async def evaluate_cell(cell: CellSpec, out: Path | str, protocol: Any, *, protocol_hash: str,
                        options: RunOptions = RunOptions(), seller_sampling: SamplingRole | None = None,
                        serve: ServeSettings | None = None, make_agent: AgentFactory | None = None,
                        pilot_record: Path | None = None, seller_weights: str | None = None,
                        seller_sha256: str | None = None,
                        on_progress: Callable[[str, CellProgress], None] | None = None) -> EvaluationResult:
    """Pilot, run or resume, compact and account one cell into ``out``.

    Args:
        cell: the cell (``build_cell`` fills the protocol's defaults).
        out: results folder of the arm (the DVC layout's ``evaluate/<arm>``).
        protocol: the loaded study protocol (environment, sampling, pilot gate).
        protocol_hash: the verified protocol hash, written into the audit records.
        options: run knobs.
        seller_sampling: the seller's sampling setting (by arm kind; default by agent kind).
        serve: ``vllm serve`` settings for a ``vllm:`` seller (default: from its spec).
        make_agent: replaces the protocol-driven agent factory (tests).
        pilot_record: where the audit's pilot record goes (default ``<out>/pilot/<arm>.json``).
        seller_weights: hash of the seller's weights (pipeline: ``weights_sha256`` of
            ``select/<arm>/seller.json``); computed from the spec when not given. Part of the store's
            fingerprint: stored episodes of another seller are moved aside, not reused.
        seller_sha256: hash of ``select/<arm>/seller.json``, which version-1 fingerprints named: a
            store fingerprinted so is recognised as the same inputs, not bought again.
        on_progress: ``(phase, progress)`` after each stored episode; phase is ``pilot`` or ``cell``.
    """
    out = Path(out)
    store = ResultsStore(out)
    env = env_config(protocol, "evaluation")
    factory = make_agent or agent_factory(protocol, retry=options.retry, max_concurrency=options.max_concurrency,
                                          seller_sampling=seller_sampling, serve=serve)
    with store.lock():
        async with AgentPool(factory) as pool:
            fingerprint = cell_fingerprint(cell, pool, protocol, protocol_hash, seller_sampling, seller_weights)
            adopt_fingerprint(out, fingerprint, legacy_seller_sha256=seller_sha256)
            pilot: dict[str, PilotResult] = {}
            buyers = sorted(cell.buyers)
            if options.pilot:
                pilot = await run_pilot(cell, protocol, out, env, pool,
                                        concurrency=options.concurrency, retry_errors=options.retry_errors,
                                        deviation=options.deviation, fingerprint=fingerprint,
                                        legacy_seller_sha256=seller_sha256)
                write_redacted(pilot_record_of(cell.study, cell.arm, pilot, protocol, protocol_hash),
                               pilot_record or out / "pilot" / f"{_safe(cell.arm)}.json")
                buyers = [b for b in buyers if pilot[b].proceeds]
            progress = CellProgress()
            if buyers:
                report = (lambda p: on_progress("cell", p)) if on_progress else None
                if options.backend.kind == "ray":
                    from negotiation.evaluation._ray import run_cell_ray  # Ray is loaded only when asked for

                    progress = await run_cell_ray(cell, store, env, pool, concurrency=options.concurrency,
                                                  retry_errors=options.retry_errors, buyers=buyers, on_progress=report,
                                                  backend=options.backend, seller_gpus=_seller_gpus(cell, serve))
                else:
                    progress = await run_cell(cell, store, env, pool, concurrency=options.concurrency,
                                              retry_errors=options.retry_errors, buyers=buyers, on_progress=report)
            episodes, turns = store.compact()
            write_accounting(out, episodes)
            _write_details(out, pool)
            _write_sampling(out, cell, pool, protocol_hash)
    blocked = sorted(set(cell.buyers) - set(buyers))
    return EvaluationResult(out, progress, episodes, turns, pilot, blocked, arm_accounting(episodes))


def arm_settings(study: Study, arm_name: str, seller: str) -> dict[str, Any]:
    """How an arm's seller is sampled (by arm kind) and served (``vllm:`` sizes): served as the arm
    actually ran, under the frozen protocol with its deviations' values (``Study.effective_protocol``:
    the paper's 31B arms on four accelerators, deviation 17), not the frozen two."""
    arm = study.arms[arm_name]
    serve = (ServeSettings.from_protocol(study.effective_protocol(arm_name), arm.size)
             if agent_kind(seller).served and arm.size else None)
    return {"seller_sampling": arm_sampling_role(arm), "serve": serve}


async def evaluate_arm(study: Study, arm_name: str, seller: str, results_dir: Path | str, *,
                       protocol: Any = None, options: RunOptions = RunOptions(), seller_weights: str | None = None,
                       seller_sha256: str | None = None,
                       on_progress: Callable[[str, CellProgress], None] | None = None) -> EvaluationResult:
    """One arm of the matrix over the protocol's full cell, with its pilot gate, sampled and served
    as the ``evaluate@<arm>`` stage does (``arm_settings``).

    Args:
        study: the loaded study (its lock hash is written into the audit records).
        arm_name: the arm's name (the ``arm`` column and the folder name).
        seller: the arm's seller spec with ``{base}`` / ``{checkpoint}`` already filled in.
        results_dir: the study's results folder (``ResultsLayout``): episodes go to
            ``evaluate/<arm>/``, the pilot record to ``pilot/<arm>.json``.
        protocol: the protocol the cell is played under; default the study's (a test passes a
            smaller one).
        options: run knobs (``params.yaml``).
        on_progress: as for ``evaluate_cell``.
    """
    layout = ResultsLayout(Path(results_dir))
    protocol = study.protocol if protocol is None else protocol
    cell = build_cell(protocol, arm=arm_name, seller=seller)
    return await evaluate_cell(cell, layout.episodes(arm_name).parent, protocol, protocol_hash=study.lock_hash,
                               options=options, **arm_settings(study, arm_name, seller),
                               pilot_record=layout.pilot(arm_name), seller_weights=seller_weights,
                               seller_sha256=seller_sha256,
                               on_progress=on_progress)
