"""``pilot@arm`` and ``evaluate@arm``: the gate, then the full cell, both tracked in MLflow.

The pilot runs the protocol's pilot episodes of every (arm, evaluation buyer) cell and writes
the audit's ``pilot/<arm>.json``. A failed gate stops the evaluate stage unless an active
``gate_override`` deviation in the registry covers that arm and buyer (the paper's 10x LR
Sonnet 5 cell). The evaluate stage then runs every cell (resumable, retried, error rows
recorded) into ``evaluate/<arm>/`` and logs one MLflow evaluation run for the arm.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError, NegotiationError
from negotiation.evaluation import (AgentPool, CellProgress, ExecutionBackend, ResultsStore, RunOptions,
                                    agent_factory, arm_settings, build_cell, cell_fingerprint,
                                    env_config, evaluate_cell, parse_backend, pilot_record, run_pilot,
                                    write_redacted)
from negotiation.agents import agent_kind, configure_rate_limits, rate_limits_from_params
from negotiation.pipeline._progress import StageProgress
from negotiation.pipeline._stage import PARAMS_FILE, knob_source, runtime_count, runtime_knob
from negotiation.study import PilotRecord, ResultsLayout, Study, as_study
from negotiation.tracking import SELLER_ARTIFACTS, MlflowTracker, experiment_name, flatten, git_commit, log_dataset_input


class GateClosedError(NegotiationError):
    """The pilot gate failed for a cell no deviation covers."""


def _seller(layout: ResultsLayout, arm: str) -> str:
    return json.loads(layout.seller(arm).read_text(encoding="utf-8"))["seller"]


def _seller_sha256(layout: ResultsLayout, arm: str) -> str:
    """SHA-256 of ``select/<arm>/seller.json``, which version-1 store fingerprints named."""
    return hashlib.sha256(layout.seller(arm).read_bytes()).hexdigest()


def _seller_weights(layout: ResultsLayout, arm: str) -> str | None:
    """The weights' hash ``select`` recorded (``seller.json:weights_sha256``): part of the store's
    fingerprint, as a run by hand with the same spec computes it."""
    return json.loads(layout.seller(arm).read_text(encoding="utf-8")).get("weights_sha256")


def _torch_single_thread(seller: str) -> None:
    """Small policy networks run ~100x slower with two threads on two shared cores. Only a seller
    that runs torch here imports it: the import alone costs seconds per stage process."""
    if not agent_kind(seller).in_process_torch:
        return
    try:
        import torch
    except ImportError:  # LLM-only installs evaluate without torch
        return
    torch.set_num_threads(1)


def _install_rate_limits() -> None:
    """Per-provider request and token limits from params.yaml ``rate_limits`` (a run-time knob:
    read when the stage runs, never a stage param), shared by every cell of this process."""
    configure_rate_limits(rate_limits_from_params(PARAMS_FILE))


def _concurrency(given: int | None) -> int:
    """Episodes in flight: the argument, else the run-time knob (not a DVC param: it changes
    how fast a cell runs, never its results)."""
    return given if given is not None else runtime_knob("evaluate.concurrency", RunOptions().concurrency)


def _backend() -> ExecutionBackend:
    """Where the evaluate stage plays its episodes: run-time knobs ``evaluate.backend`` (``local``
    or ``ray``; the cluster is ``$RAY_ADDRESS``'s) and ``evaluate.workers`` (Ray workers; ``auto``:
    one per cluster CPU). Never stage params: the tables are the same either way."""
    kind = runtime_knob("evaluate.backend", "local")
    return parse_backend(kind, runtime_count("evaluate.workers"), where=knob_source("evaluate.backend"))


def run_pilot_stage(study: Study | str, arm: str, results_dir: Path, *, concurrency: int | None = None) -> PilotRecord:
    """Run the pilot gate of ``arm`` against every evaluation buyer; write ``pilot/<arm>.json``."""
    concurrency = _concurrency(concurrency)
    _install_rate_limits()
    study = as_study(study)
    layout = ResultsLayout(Path(results_dir))
    seller = _seller(layout, arm)
    _torch_single_thread(seller)
    cell = build_cell(study.protocol, arm=arm, seller=seller)
    digest = study.lock_hash
    settings = arm_settings(study, arm, seller)
    factory = agent_factory(study.protocol, retry=RunOptions().retry, max_concurrency=concurrency, **settings)
    root = layout.pilot_store(arm)

    async def pilot() -> dict[str, Any]:
        async with AgentPool(factory) as pool:
            fingerprint = cell_fingerprint(cell, pool, study.protocol, digest, settings["seller_sampling"],
                                           _seller_weights(layout, arm))
            return await run_pilot(cell, study.protocol, root, env_config(study.protocol),
                                   pool, concurrency=concurrency, retry_errors=True, fingerprint=fingerprint,
                                   legacy_seller_sha256=_seller_sha256(layout, arm))

    with ResultsStore(root / "pilot").lock():
        results = asyncio.run(pilot())
    record = pilot_record(study.name, arm, results, study.protocol, digest)
    write_redacted(record, layout.pilot(arm))
    return record


def gate_overrides(study: Study | str, arm: str, record: PilotRecord) -> dict[str, list[int]]:
    """For each failed buyer cell, the active ``gate_override`` deviations covering it."""
    log = as_study(study).deviations
    return {cell.buyer: log.covering(arm, ("gate_override",), buyer=cell.buyer)
            for cell in record.cells if not cell.passed}


def _check_gate(study: Study, arm: str, layout: ResultsLayout) -> tuple[list[str], list[int]]:
    record = PilotRecord.model_validate_json(layout.pilot(arm).read_text(encoding="utf-8"))
    overrides = gate_overrides(study, arm, record)
    uncovered = sorted(buyer for buyer, ids in overrides.items() if not ids)
    if uncovered:
        shown = ", ".join(f"{c.buyer}: {c.bad_parses} bad parses in {c.turns} turns" for c in record.cells
                          if c.buyer in uncovered)
        raise GateClosedError(f"{layout.pilot(arm)}:cells: pilot gate failed ({shown}); log a gate_override "
                              f"deviation (`nego deviation new {study.name} --category gate_override ...`) to run it")
    return sorted(b.buyer for b in record.cells), sorted({i for ids in overrides.values() for i in ids})


def run_evaluate_stage(study: Study | str, arm: str, results_dir: Path, *, concurrency: int | None = None,
                       retry_errors: bool = True) -> dict[str, Any]:
    """Evaluate ``arm`` on every cell into ``evaluate/<arm>/`` (``track`` logs it to MLflow)."""
    concurrency = _concurrency(concurrency)
    _install_rate_limits()
    study = as_study(study)
    layout = ResultsLayout(Path(results_dir))
    _, override_ids = _check_gate(study, arm, layout)
    seller = _seller(layout, arm)
    _torch_single_thread(seller)
    cell = build_cell(study.protocol, arm=arm, seller=seller)
    options = RunOptions(concurrency=concurrency, retry_errors=retry_errors, pilot=False,
                         deviation=override_ids[0] if override_ids else None, backend=_backend())
    out = layout.evaluate(arm)
    with StageProgress(f"evaluate@{arm}", unit="episodes") as progress:
        def on_progress(phase: str, p: CellProgress) -> None:
            progress.update(p.done, p.total, f"resumed {p.skipped}, errors {p.errors}, retries {p.retries}, "
                                             f"${p.cost:.4f}")

        result = asyncio.run(evaluate_cell(cell, out, study.protocol, protocol_hash=study.lock_hash,
                                           options=options, seller_weights=_seller_weights(layout, arm),
                                           seller_sha256=_seller_sha256(layout, arm),
                                           on_progress=on_progress, **arm_settings(study, arm, seller)))
    metrics = arm_metrics(study.protocol, result.episodes)
    layout.metrics(arm).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return metrics


def arm_metrics(protocol: Any, episodes: Any) -> dict[str, Any]:
    """Headline metrics of one arm for ``dvc metrics show`` and MLflow (errors counted apart)."""
    from negotiation.analysis import context_from_protocol, outcome_summary

    errors = int((episodes["outcome"] == "error").sum()) if len(episodes) else 0
    ok = episodes[episodes["outcome"] != "error"]
    summary = outcome_summary(ok, context_from_protocol(protocol)) if len(ok) else {}
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in summary.items()}
    from negotiation.evaluation import arm_accounting

    totals = next(iter(arm_accounting(episodes).values()), {}) if len(episodes) else {}
    usd = totals.get("usd_per_episode")
    return {**clean, "episodes": int(len(episodes)), "error_rows": errors,
            "usd_per_episode": usd}  # null when a provider's price is unknown, never a silent $0


def log_evaluation_run(study: Study | str, arm: str, seller: str, metrics: dict[str, Any], layout: ResultsLayout,
                       tables_sha256: str) -> str | None:
    """One MLflow run per evaluated arm: metrics, tags, tables, pilot record and sampling."""
    study = as_study(study)
    study_name, log = study.name, study.deviations
    deviations = sorted(e.id for e in log.active() if e.covers(arm, None, None))
    tags = {"study": study_name, "arm": arm, "phase": "evaluation", "dvc_stage": f"evaluate@{arm}",
            "git_commit": git_commit(), "protocol_hash": study.lock_hash, "seller": seller,
            "deviations": ",".join(map(str, deviations)) or "none", "tables_sha256": tables_sha256}
    tracker = MlflowTracker(experiment_name(study_name), f"evaluate/{arm}", flatten({"seller": seller}), tags)
    tracker.log_step(0, {f"eval/{k}": float(v) for k, v in metrics.items() if isinstance(v, (int, float))})
    for path in (layout.episodes(arm), layout.turns(arm), layout.sampling(arm), layout.metrics(arm),
                 layout.pilot(arm)):
        if path.exists():
            tracker.log_artifact(path)
    for path in (layout.seller(arm), layout.selection(arm)):  # what the arm's registered model version points at
        if path.exists():
            tracker.log_artifact(path, SELLER_ARTIFACTS)
    scenarios = layout.scenarios / "evaluation.parquet"
    if scenarios.exists():
        log_dataset_input(tracker.client, tracker.run_id, scenarios, name=f"{study_name}-evaluation-scenarios",
                          context="evaluation")
    tracker.finish()
    return tracker.run_id
