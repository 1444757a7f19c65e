"""``nego play``: run one episode between two agents and show the transcript or the record.

The engine, the agents and rich are imported when an episode is played, not when the module
is: ``nego play --help`` needs only the options (``benchmarks/cli_start.py`` times it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

import typer

from negotiation.cli._config import Phase, checkpoint_study, require_study
from negotiation.cli._output import JSON_OPTION, console, print_json, scenario_for

if TYPE_CHECKING:
    from rich.console import Console

    from negotiation.env import EnvConfig, Episode, Scenario, TurnRecord

_ROLE_STYLE = {"seller": "bold cyan", "buyer": "bold magenta"}


def episode_json(episode: Episode, study: str) -> dict:
    """The episode record: the episode-table row plus its turn-table rows (JSON columns decoded)."""
    from negotiation.env import episode_row, turn_rows

    extra = {"study": study}
    row = episode_row(episode, extra)
    row["final_ledger"] = json.loads(row["final_ledger"])
    turns = []
    for t in turn_rows(episode, extra):
        t["terms"] = [{"name": n, "value": v} for n, v in json.loads(t["terms"])]
        t["ledger_after"] = json.loads(t["ledger_after"])
        turns.append(t)
    return {**row, "turns": turns}


def _format_terms(terms) -> str:
    return ", ".join(f"{name}={value!r}" if isinstance(value, str) else f"{name}={json.dumps(value)}"
                     for name, value in terms)


def _print_turn(out: Console, turn: TurnRecord) -> None:
    from rich.text import Text

    head = Text(f"turn {turn.turn:>2} · {turn.role}", style=_ROLE_STYLE[turn.role])
    out.print(head)
    out.print(Text(turn.prose or "(no prose)", style="default"))
    if turn.ok:
        out.print(Text(f"  {turn.action} {_format_terms(turn.terms)}".rstrip(), style="green"))
    else:
        out.print(Text(f"  malformed turn ({turn.error}); ledger unchanged", style="red"))
    flagged = [name for name, on in turn.flags.items() if on]
    if flagged:
        out.print(Text(f"  flags: {', '.join(flagged)}", style="yellow"))


def _print_outcome(out: Console, episode: Episode, reward: float) -> None:
    from rich.panel import Panel
    from rich.text import Text

    s, b = episode.seller_score, episode.buyer_score
    if episode.deal:
        title = (f"DEAL on turn {episode.n_turns} (round {episode.n_rounds}), accepted by {episode.closed_by}")
        body = (f"seller Ũ {s.u_tilde:.3f} · buyer Ũ {b.u_tilde:.3f} · S {episode.S:.3f} · reward {reward:.3f}\n"
                f"ledger: {_format_terms(episode.final_ledger.items())}")
        style = "green"
    else:
        title = f"NO DEAL after {episode.n_turns} turns ({episode.n_rounds} rounds)"
        body = f"S {episode.S:.3f} · reward {reward:.3f} · malformed turns {episode.n_bad()}"
        style = "red"
    out.print(Panel(Text(body), title=title, border_style=style))


def play_episode(seller: str, buyer: str, scenario: Scenario, config: EnvConfig, protocol: Any) -> Episode:
    """Play one episode with the lifecycle ``nego evaluate`` gives its agents.

    Agents get the study's sampling settings, are started before the first turn (a ``vllm:``
    seller's server comes up, an ``hf:`` seller loads its checkpoint) and are closed after the
    last, also on failure, so no server outlives the command. A call that fails for good ends
    the command with one ``error:`` line and exit status 1.
    """
    import asyncio

    from negotiation.agents import AgentCallError, RetryPolicy
    from negotiation.env import arun_episode
    from negotiation.evaluation import AgentPool, agent_factory

    factory = agent_factory(protocol, retry=RetryPolicy(), max_concurrency=1)

    async def run() -> Episode:
        async with AgentPool(factory) as pool:
            agents = await pool.get(seller, "seller"), await pool.get(buyer, "buyer")
            return await arun_episode(scenario, *agents, config)

    try:
        return asyncio.run(run())
    except AgentCallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def play_command(
    seller: str = typer.Option(..., "--seller", help="Seller agent spec, e.g. scripted:boulware."),
    buyer: str = typer.Option(..., "--buyer", help="Buyer agent spec, e.g. scripted:titfortat."),
    domain: str = typer.Option(..., "--domain", help="Domain name (see `nego domains`)."),
    seed: int = typer.Option(..., "--seed", min=0, help="Scenario seed."),
    phase: Phase = typer.Option("evaluation", "--phase",
                                help="evaluation: ACCEPT ignores attached terms; training: applies them first."),
    as_json: bool = JSON_OPTION,
    study: Optional[str] = typer.Option(
        None, "--study", help="Study whose protocol supplies the environment constants and sampling (default: the "
                              "study that built an hf:/vllm: checkpoint among the agents, else demo)."),
) -> None:
    """Play one episode and print the transcript, or with --json the episode record."""
    from negotiation.protocol import env_config
    from negotiation.study import load_study

    study = study or checkpoint_study((seller, buyer)) or "demo"
    require_study(study)
    protocol = load_study(study).protocol
    config = env_config(protocol, phase)
    scenario = scenario_for(domain, seed, protocol.environment.dirichlet_alpha)
    episode = play_episode(seller, buyer, scenario, config, protocol)
    record = episode_json(episode, study)
    from negotiation.agents import redact, redact_obj

    # A provider may echo the key into a turn's text: the terminal gets what a stored record would.
    if as_json:
        print_json(redact_obj(record))
        return
    from rich.rule import Rule
    from rich.text import Text

    out = console()
    with out.capture() as shown:
        out.print(Rule(Text(f"{domain} · seed {seed} · {phase} · seller {seller} vs buyer {buyer}")))
        for turn in episode.turns:
            _print_turn(out, turn)
        _print_outcome(out, episode, record["reward"])
    typer.echo(redact(shown.get()), nl=False)
