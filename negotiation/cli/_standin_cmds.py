"""``nego serve-standin``: scripted personas served over OpenAI's chat API (tests, smoke runs).

Its own module: the ``--kinds`` default is the harness' fault list, so reading this module
imports the evaluation harness, which ``nego evaluate --help`` does not need.
"""

from __future__ import annotations

import asyncio

import typer
from pydantic import ValidationError
from rich.console import Console

from negotiation.errors import ConfigError, format_validation_error
from negotiation.evaluation import FAULT_KINDS, Faults, StandinConfig, StandinServer


def serve_standin(
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0 picks a free one)"),
    host: str = typer.Option("127.0.0.1", "--host"),
    study: str = typer.Option("demo", "--study", help="Study whose turn cap the scripted agents assume"),
    error_rate: float = typer.Option(0.0, "--error-rate", min=0.0, max=1.0, help="Fraction with a transient fault"),
    kinds: str = typer.Option(",".join(FAULT_KINDS), "--kinds", help="Transient fault kinds, comma-separated"),
    retry_after: float = typer.Option(0.0, "--retry-after", min=0.0, help="Retry-After seconds on a 429"),
    hang: float = typer.Option(30.0, "--hang", min=0.0, help="Seconds a 'timeout' fault stalls"),
    latency: float = typer.Option(0.0, "--latency", min=0.0, help="Seconds before each reply"),
    bad_request_rate: float = typer.Option(0.0, "--bad-request-rate", min=0.0, max=1.0,
                                           help="Fraction answered with a permanent 400"),
    reject_params: str = typer.Option("", "--reject-params", help="Parameters refused with a 400, comma-separated"),
    seed: int = typer.Option(0, "--seed", help="Seed of the fault draws"),
) -> None:
    """Serve scripted personas (model = boulware, conceder, linear, titfortat, fixed) over OpenAI's chat API."""
    try:
        from negotiation.study import load_study

        protocol = load_study(study).protocol
        faults = Faults(error_rate=error_rate, kinds=tuple(k for k in kinds.split(",") if k), retry_after_s=retry_after,
                        hang_s=hang, latency_s=latency, bad_request_rate=bad_request_rate,
                        reject_params=tuple(p for p in reject_params.split(",") if p), seed=seed)
        config = StandinConfig(host=host, port=port, max_turns=protocol.environment.turn_cap, faults=faults)
    except ValidationError as exc:  # one line at the app's boundary, exit 2
        raise ConfigError(format_validation_error("serve-standin", exc)) from None
    server = StandinServer(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve_forever())
        while server.port is None and not task.done():
            await asyncio.sleep(0.01)
        Console(stderr=True).print(f"stand-in serving on {server.api_base} (Ctrl-C stops)")
        await task

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
