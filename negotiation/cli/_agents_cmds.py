"""``nego agents list-anac``: the ANAC agents ``negmas:<Name>`` seats, by year, and which run."""

from __future__ import annotations

from typing import List, Optional

import typer

from negotiation.cli._output import print_json

__all__ = ["agents_app"]

agents_app = typer.Typer(help="List the ANAC agents that negmas:<Name> seats, by year, and which of them run.",
                         no_args_is_help=True, add_completion=False)


@agents_app.command("list-anac")
def list_anac_command(
    check: bool = typer.Option(True, "--check/--no-check",
                               help="Play one short episode with each agent to see whether it runs."),
    agent: Optional[List[str]] = typer.Option(None, "--agent", help="Only this agent (repeatable)."),
    domain: str = typer.Option("used_car", "--domain", help="Domain of the check's episode."),
    rounds: int = typer.Option(4, "--rounds", min=1, help="Rounds of the check's episode."),
    as_json: bool = typer.Option(False, "--json", help="Print one object per agent as JSON."),
) -> None:
    """List the negotiators of negmas-genius-agents (the anac extra) by ANAC year and name. With
    --check each plays one episode as buyer against scripted:boulware (a grid of 2 values per
    continuous term); one that fails is marked with the reason. The package says its agents were
    reimplemented from Java with AI assistance and may not behave exactly as the originals."""
    from negotiation.agents import anac_classes, check_negmas_agent
    from negotiation.errors import ConfigError

    classes = anac_classes()
    names = sorted(classes, key=lambda n: (classes[n][0] or 0, n))
    unknown = sorted(set(agent or ()) - set(classes))
    if unknown:
        raise ConfigError(f"--agent: unknown NegMAS agent(s) {', '.join(unknown)}")
    rows = []
    for name in names if not agent else [n for n in names if n in agent]:
        reason = check_negmas_agent(name, domain, rounds=rounds) if check else None
        rows.append({"year": classes[name][0], "name": name, "spec": f"negmas:{name}",
                     "runs": None if not check else reason is None, "reason": reason})
    if as_json:
        print_json(rows)
        return
    for row in rows:
        status = "" if not check else "  runs" if row["runs"] else f"  FAILS: {row['reason']}"
        typer.echo(f"{row['year'] or '-':>4}  {row['name']}{status}")
    if check:
        typer.echo(f"{sum(bool(r['runs']) for r in rows)} of {len(rows)} run")
