"""``nego domain import genius DIR`` and ``nego domain export NAME DIR``: Genius/NegMAS scenarios
in and out (``negotiation.env._genius``; NegMAS comes with the ``anac`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from negotiation.cli._output import STUDY_OPTION, print_json

__all__ = ["domain_app"]

domain_app = typer.Typer(help="Import a Genius/NegMAS scenario as a domain, or export one of ours as one.",
                         no_args_is_help=True, add_completion=False)
import_app = typer.Typer(help="Write a domain under protocol/domains/ from another format.", no_args_is_help=True,
                         add_completion=False)
domain_app.add_typer(import_app, name="import")

DOMAINS_OPTION = typer.Option(None, "--domains-dir", help="Folder of domain files (default: protocol/domains).",
                              file_okay=False)


@import_app.command("genius")
def import_genius_command(
    folder: Path = typer.Argument(..., help="Genius/NegMAS scenario folder: a domain file and two utility files."),
    name: Optional[str] = typer.Option(None, "--name", help="Domain name (default: the folder's name, snake-cased)."),
    domains_dir: Optional[Path] = DOMAINS_OPTION,
    force: bool = typer.Option(False, "--force", help="Replace an existing domain file of that name."),
    as_json: bool = typer.Option(False, "--json", help="Print the written file and the domain's terms as JSON."),
) -> None:
    """Read FOLDER with NegMAS's loader and write a profiled domain (both parties' weights,
    per-value evaluations, reservation values and discounts, as in the files). The utility files
    map to the roles by name when they are seller and buyer, else seller first in NegMAS's order."""
    from negotiation.env import import_genius, load_domain_file

    path = import_genius(folder, name, domains_dir, overwrite=force)
    domain = load_domain_file(path)
    if as_json:
        print_json({"path": str(path), "name": domain.name, "terms": list(domain.term_names)})
        return
    typer.echo(f"wrote {path}: {len(domain.terms)} terms ({', '.join(domain.term_names)})")


@domain_app.command("export")
def export_command(
    name: str = typer.Argument(..., help="Domain under protocol/domains/, e.g. used_car."),
    folder: Path = typer.Argument(..., help="Folder to write the Genius XML files into.", file_okay=False),
    seed: int = typer.Option(0, "--seed", help="Scenario seed of a drawn domain (a profiled one ignores it)."),
    study: str = STUDY_OPTION,
    domains_dir: Optional[Path] = DOMAINS_OPTION,
) -> None:
    """Write domain NAME as a Genius scenario with NegMAS's writer: a profiled domain with its own
    numbers, a drawn one with seed SEED's preferences drawn as STUDY draws them (evaluation (φ + 1) / 2, reservation 0)."""
    from negotiation.cli._config import dirichlet_alpha_for
    from negotiation.env import export_genius, load_domain

    domain = load_domain(name, domains_dir)
    alpha = dirichlet_alpha_for(study) if domain.profiles is None else 0.0
    for path in export_genius(domain, folder, seed=seed, alpha=alpha):
        typer.echo(f"wrote {path}")
