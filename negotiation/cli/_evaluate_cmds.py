"""``nego evaluate``: one ad hoc cell outside DVC.

Exits 0 when the cell finished with no error rows and no blocked pilot gate, 1 when error rows
remain or a gate stopped a buyer, and 2 on bad input (one ``file:key: reason`` line).

The evaluation harness (pandas, the agents, asyncio) and rich are imported when a cell runs:
``nego evaluate --help`` needs only the options (``benchmarks/cli_start.py`` times it).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from negotiation.errors import ConfigError, NegotiationError
from negotiation.names import check_name

if TYPE_CHECKING:
    from rich.console import Console

    from negotiation.evaluation import CellProgress, EvaluationResult


@lru_cache(maxsize=1)
def _console() -> Console:
    """The one console on stderr that the summary lines go to."""
    from rich.console import Console

    return Console(stderr=True)


def _stats(p: CellProgress) -> str:
    return f"errors {p.errors}  retries {p.retries}  tokens {p.tokens:,}  ${p.cost:.4f}"


def _report(result: EvaluationResult) -> None:
    for label, gate in sorted(result.pilot.items()):
        _console().print(f"pilot {label}: {gate.decision} ({gate.bad_parses} bad parses in {gate.turns_counted} "
                       f"{gate.counted_turns} turns, limit {gate.max_bad_parses}, {gate.error_rows} error rows)")
    for arm, totals in sorted(result.accounting.items()):
        usd, mean_s = totals["usd_per_episode"], totals["mean_S"]
        _console().print(f"{arm}: {totals['episodes']} episodes, {totals['error_rows']} error rows, "
                       f"mean S {'n/a' if mean_s is None else f'{mean_s:.4f}'}, "
                       f"retries {totals['retries']}, $/episode {'unknown' if usd is None else f'{usd:.4f}'}")
    _console().print(f"results: {result.out / 'episodes.parquet'}")


def _summary(result: EvaluationResult) -> dict:
    """``--json``: the run's outcome as one object (the stderr summary lines, unrounded)."""
    return {"ok": result.ok, "out": str(result.out), "episodes": str(result.out / "episodes.parquet"),
            "error_rows": result.error_rows, "blocked": list(result.blocked),
            "pilot": {label: gate.model_dump(mode="json") for label, gate in sorted(result.pilot.items())},
            "accounting": result.accounting}


def evaluate(
    seller: str = typer.Option(..., "--seller", help="Seller spec, e.g. litellm:openai/m?api_base=http://127.0.0.1:8000/v1"),
    buyer: Optional[list[str]] = typer.Option(None, "--buyer", help="Buyer spec or label=spec; repeatable "
                                              "(default: the study's evaluation buyers)"),
    domains: Optional[str] = typer.Option(None, "--domains", help="Comma-separated domains (default: all nine)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="A:B = seeds A..B-1 (default: the evaluation block)"),
    concurrency: int = typer.Option(16, "--concurrency", min=1, max=4096, help="Episodes in flight"),
    out: Path = typer.Option(..., "--out", help="Results folder (Parquet, shards, accounting)"),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Rerun episodes stored as error rows"),
    study: str = typer.Option("demo", "--study", help="Study whose protocol supplies environment and sampling"),
    arm: Optional[str] = typer.Option(None, "--arm", help="Arm name for the key column (default: the seller spec)"),
    pilot: bool = typer.Option(True, "--pilot/--no-pilot", help="Run the pilot gate first"),
    deviation: Optional[int] = typer.Option(None, "--deviation", help="Deviation id covering a failed pilot gate"),
    max_attempts: int = typer.Option(8, "--max-attempts", min=1, max=100, help="Attempts per LLM call"),
    timeout: float = typer.Option(120.0, "--timeout", min=0.001, max=86_400.0,
                                  help="Seconds an LLM request may wait for each part of its reply (twice this in all)"),
    max_reply_bytes: int = typer.Option(8 * 2**20, "--max-reply-bytes", min=1, max=2**31,
                                        help="Largest LLM reply body read; a longer one is an error row"),
    backoff: float = typer.Option(1.0, "--backoff", min=0.0, max=3600.0,
                                  help="Seconds before the first retry (doubles each time)"),
    backoff_max: float = typer.Option(60.0, "--backoff-max", min=0.0, max=3600.0, help="Longest wait between retries"),
    backend: str = typer.Option("local", "--backend", help="local, or ray: workers on the $RAY_ADDRESS cluster "
                                                          "(else a Ray instance here); same tables"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Ray workers (default: one per cluster CPU)"),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as one JSON object on stdout (summary "
                                                       "lines on stderr left out)"),
) -> None:
    """Evaluate a seller against buyers over domains x seeds; resumable, with retries and error rows."""
    import asyncio

    from negotiation.agents import RetryPolicy
    from negotiation.evaluation import (RunOptions, build_cell, evaluate_cell, parse_backend, parse_buyers,
                                        parse_domains, parse_seeds)
    from negotiation.pipeline import StageProgress

    try:
        from negotiation.study import load_study

        loaded = load_study(study)
        protocol = loaded.protocol
        if arm is not None:
            check_name("--arm", arm)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out:{out}: exists and is not a folder (results are never written over a file)")
        cell = build_cell(protocol, arm=arm or seller, seller=seller,
                          buyers=parse_buyers(buyer) if buyer else None,
                          domains=parse_domains(domains) if domains is not None else None,
                          seeds=parse_seeds(seeds) if seeds else None)
        options = RunOptions(concurrency=concurrency, retry_errors=retry_errors, pilot=pilot, deviation=deviation,
                             retry=RetryPolicy(max_attempts=max_attempts, timeout_s=timeout, base_delay_s=backoff,
                                               max_delay_s=backoff_max, max_reply_bytes=max_reply_bytes),
                             backend=parse_backend(backend, workers, where="--backend"))
        # A bar on a terminal, else log lines (-v): a refused spec stays the one line on stderr.
        with StageProgress(f"evaluate {cell.arm}", unit="episodes") as bar:

            def on_progress(phase: str, p: CellProgress) -> None:
                bar.update(p.done, p.total, _stats(p))

            result = asyncio.run(evaluate_cell(cell, out, protocol, protocol_hash=loaded.lock_hash,
                                               options=options, on_progress=on_progress))
    except NegotiationError as exc:  # plain text: the message may hold brackets rich would read as markup
        typer.echo("error: " + "; ".join(line for line in str(exc).splitlines() if line.strip()), err=True)
        raise typer.Exit(2) from None
    if as_json:
        from negotiation.cli._output import print_json

        print_json(_summary(result))
        raise typer.Exit(0 if result.ok else 1)
    _report(result)
    if result.blocked:
        _console().print(f"pilot gate stopped: {', '.join(result.blocked)} (log a deviation and pass --deviation)")
    if result.error_rows:
        _console().print(f"{result.error_rows} error rows remain: rerun with --retry-errors")
    raise typer.Exit(0 if result.ok else 1)
