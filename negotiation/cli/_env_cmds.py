"""``nego domains | scenario | score | parse``: look at the environment one piece at a time.

Each command imports what it uses when it runs (a start-up of well under half a second is part
of the CLI's contract, ``benchmarks/cli_start.py``): ``nego parse`` needs the parser alone, not
numpy (scenarios) or pydantic (domains); ``nego --help`` needs none of them. Their tables are
plain columns (``print_table``): rich would read markup in cells that come from domain files.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import typer

from negotiation.cli._app import app
from negotiation.cli._config import dirichlet_alpha_for
from negotiation.cli._output import (
    JSON_OPTION, STUDY_OPTION, print_json, print_table, read_json_arg, scenario_for,
)
from negotiation.errors import ConfigError

if TYPE_CHECKING:
    from negotiation.env import Scenario, Term

SEED_ARG = typer.Argument(..., min=0, help="Scenario seed (non-negative integer).")
DOMAIN_ARG = typer.Argument(..., help="Domain name, e.g. used_car (see `nego domains`).")


def _numpy_without_blas_threads() -> None:
    """``scenario`` and ``score`` use numpy for the Dirichlet draw and float arithmetic only, no
    linear algebra; importing numpy starts OpenBLAS's thread pool, a thread per core (about
    0.15 s of these commands' 0.5 s start-up on 2 cores, measured). One thread, same draws. Only
    before numpy's first import in this process, and only where the caller has not chosen."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@app.command("domains")
def domains_command(as_json: bool = JSON_OPTION) -> None:
    """List the domains under protocol/domains with their term counts."""
    from negotiation.env import load_domains

    rows = []
    for name, domain in load_domains().items():
        kinds = [t.kind for t in domain.terms]
        rows.append({"name": name, "title": domain.title, "terms": len(kinds),
                     "continuous": kinds.count("continuous"), "categorical": kinds.count("categorical"),
                     "binary": kinds.count("binary")})
    if as_json:
        print_json(rows)
        return
    counts = ("terms", "continuous", "categorical", "binary")
    print_table(("domain", "title", *counts), [(r["name"], r["title"], *(str(r[k]) for k in counts)) for r in rows])


def _term_json(term: Term) -> dict:
    if term.is_continuous:
        return {"name": term.name, "kind": term.kind, "range": list(term.range), "unit": term.unit,
                "seller_prefers": "high" if term.high_preferred_by == "seller" else "low"}
    return {"name": term.name, "kind": term.kind, "levels": list(term.levels)}


def scenario_json(scenario: Scenario) -> dict:
    """The ``nego scenario --json`` payload."""
    from negotiation.env import ROLES

    out = {"domain": scenario.domain.name, "seed": scenario.seed, "alpha": scenario.alpha,
           "terms": [_term_json(t) for t in scenario.domain.terms]}
    for role in ROLES:
        prefs = scenario.prefs(role)
        out[role] = {"weights": dict(prefs.weights), "preferred": dict(prefs.preferred)}
        if prefs.evaluations is not None:  # a profiled domain: the per-value evaluations behind them
            out[role]["evaluations"] = {k: v if isinstance(v, tuple) else dict(v) for k, v in prefs.evaluations.items()}
    return out


def _wants(term: Term, scenario: Scenario, role: str) -> str:
    from negotiation.env import prefers_high

    if term.is_continuous:
        lo, hi = term.range
        return f"{hi:g} {term.unit}" if prefers_high(scenario.prefs(role), term) else f"{lo:g} {term.unit}"
    return str(scenario.prefs(role).preferred[term.name])


def _print_scenario(scenario: Scenario) -> None:
    domain = scenario.domain
    rows = []
    for t in domain.terms:
        span = f"[{t.range[0]:g}, {t.range[1]:g}] {t.unit}" if t.is_continuous else " / ".join(map(str, t.levels))
        rows.append((t.name, t.kind, span, f"{scenario.seller.weights[t.name]:.3f}", _wants(t, scenario, "seller"),
                     f"{scenario.buyer.weights[t.name]:.3f}", _wants(t, scenario, "buyer")))
    print_table(("term", "kind", "range / levels", "seller w", "seller wants", "buyer w", "buyer wants"), rows,
                title=f"{domain.title}: {domain.name}, seed {scenario.seed}")


@app.command("scenario")
def scenario_command(domain: str = DOMAIN_ARG, seed: int = SEED_ARG, as_json: bool = JSON_OPTION,
                     study: str = STUDY_OPTION) -> None:
    """Show a scenario: the domain's terms and both parties' weights and preferred levels."""
    _numpy_without_blas_threads()
    scenario = scenario_for(domain, seed, dirichlet_alpha_for(study))
    if as_json:
        print_json(scenario_json(scenario))
        return
    _print_scenario(scenario)


def score_json(scenario: Scenario, ledger: dict) -> dict:
    """The ``nego score --json`` payload: both Ũ, their parts and the ledger's flags."""
    from negotiation.env import ROLES, score_ledger

    seller, buyer = (score_ledger(scenario, role, ledger) for role in ROLES)
    return {"domain": scenario.domain.name, "seed": scenario.seed, "seller": seller.u_tilde,
            "buyer": buyer.u_tilde,
            "parts": {role: {"u": s.u, "distributive": s.distributive, "integrative": s.integrative}
                      for role, s in zip(ROLES, (seller, buyer))},
            "flags": {"n_off_schema": seller.n_off_schema, "n_invalid": seller.n_invalid,
                      "n_out_of_range": seller.n_out_of_range}}


@app.command("score")
def score_command(
    domain: str = DOMAIN_ARG, seed: int = SEED_ARG,
    ledger: str = typer.Option(..., "--ledger", help='Ledger as a JSON object, e.g. \'{"price": 40}\'.'),
    as_json: bool = JSON_OPTION, study: str = STUDY_OPTION,
) -> None:
    """Score a ledger for both parties: normalized utility Ũ in [0, 1] and the ledger's flags."""
    terms = read_json_arg("--ledger", ledger)
    if not isinstance(terms, dict):
        raise ConfigError(f"--ledger: must be a JSON object of term name -> value, got {type(terms).__name__}")
    _numpy_without_blas_threads()
    scenario = scenario_for(domain, seed, dirichlet_alpha_for(study))
    payload = score_json(scenario, terms)
    if as_json:
        print_json(payload)
        return
    for role, parts in payload["parts"].items():  # ROLES' order
        typer.echo(f"{role:6} Ũ = {payload[role]:.4f}  (distributive {parts['distributive']:.4f}, "
                   f"integrative {parts['integrative']:.4f})")
    typer.echo("flags: " + ", ".join(f"{k} {v}" for k, v in payload["flags"].items()))


@app.command("parse")
def parse_command(as_json: bool = JSON_OPTION) -> None:
    """Parse one message read from stdin: action, terms, the prose shown, error and flags."""
    from negotiation.env import parse_message

    # Bytes, decoded leniently: the parser is total over any text, so is this command.
    parsed = parse_message(typer.get_binary_stream("stdin").read().decode("utf-8", "replace"))
    payload = {"ok": parsed.ok, "action": parsed.action,
               "terms": [{"name": n, "value": v} for n, v in parsed.terms], "prose": parsed.prose,
               "error": parsed.error, "notes": parsed.notes, "flags": parsed.flags}
    if as_json:
        print_json(payload)
        return
    # Plain lines (no rich): nothing from the message is read as markup, and no console to build.
    typer.echo(f"ok: {parsed.ok}" + (f"  action: {parsed.action}" if parsed.ok else f"  error: {parsed.error}"))
    for name, value in parsed.terms:
        typer.echo(f"  {name} = {value!r}")
    typer.echo(f"prose: {parsed.prose}")
    typer.echo("flags: " + ", ".join(f"{k} {v}" for k, v in parsed.flags.items()))
