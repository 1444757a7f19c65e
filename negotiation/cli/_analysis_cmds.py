"""``nego contrast|power|frontier|validate|analyze|report|viewer|packet|signoff``: the analysis commands.

``negotiation.cli._mounts`` mounts these functions on ``nego``; ``analysis_app`` holds them all
for tests.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import typer

from negotiation.analysis import EPISODE_COLUMNS, AnalysisError, require_columns
from negotiation.cli._output import JSON_OPTION, PROFILE_OPTION, jsonable, print_json
from negotiation.errors import ConfigError

STUDY = typer.Option("demo", "--study", help="Study whose protocol/<study>/ supplies the constants.")
ROOT = typer.Option(None, "--root", help="Repository root holding protocol/ and registry/ (default: this checkout).")
RESULTS = typer.Option(None, "--results", help="Results directory (default outputs/<study>).")
ARMS = typer.Option(None, "--arms", help="Only these arms, comma-separated names or patterns (e.g. 'lm_m_*,ref_*': "
                    "a part of a study built apart; default: every arm the results' profile plans).")
def _results_dir(study, results: Optional[Path]) -> Path:
    return Path(results) if results is not None else study.layout.dir


def _results_study(study: str, root: Optional[Path], results: Optional[Path], profile: Optional[str],
                   arms: Optional[str] = None):
    """The study loaded once, read in the profile of ``results`` (``--profile``, else
    ``Study.results_profile``: a GPU results folder is checked against the GPU design), with the
    arms the pipeline's stages read there (``analysis_scope``; ``--arms`` narrows them)."""
    from negotiation.pipeline import analysis_scope
    from negotiation.protocol import check_profile
    from negotiation.study import load_study

    if profile is not None:
        check_profile(profile)  # before any file is read
    context = load_study(study, root)
    context = context.in_profile(profile or context.results_profile(_results_dir(context, results)))
    chosen = None if arms is None else [part.strip() for part in arms.split(",") if part.strip()]
    return analysis_scope(context, chosen, _results_dir(context, results))


def _episode_table(path: Path) -> Any:
    """``path`` read as an episode table; a missing path, a folder, a file that is not Parquet or a
    table without the metrics' columns is an error naming the file (and the column)."""
    import pandas as pd
    import pyarrow

    if not path.is_file():
        raise AnalysisError(str(path), "<file>", "a folder, not an episode table" if path.is_dir()
                            else "no such episode table")
    try:
        frame = pd.read_parquet(path)
    except (pyarrow.ArrowException, OSError, ValueError) as exc:
        raise AnalysisError(str(path), "<file>", f"not a Parquet episode table ({type(exc).__name__})") from exc
    require_columns(frame, EPISODE_COLUMNS, str(path))
    return frame


def _paired_values(paths: list[Path], metric: str, context: Any,
                   domains: tuple[str, ...] | None = None) -> tuple[Any, str, Any, Any]:
    """The protocol, the contrast's name and its per-key values and seed clusters: the first table
    minus the second (one table: its own values), derived columns added as the analysis adds them."""
    from negotiation.analysis import EFFICIENCY_COLUMNS, PairedTables, context_from_protocol, with_derived_columns
    from negotiation.study import ContrastSpec

    frames = {str(path): _episode_table(path) for path in paths}
    if len(frames) != len(paths):
        raise AnalysisError(str(paths[0]), "<file>", "minuend and subtrahend are the same file")
    protocol = context.protocol
    frames, _ = with_derived_columns(frames, context_from_protocol(protocol), protocol.environment.dirichlet_alpha,
                                     efficiency=metric in EFFICIENCY_COLUMNS)
    name = " - ".join(path.stem for path in paths)
    spec = ContrastSpec(name=name, weights=dict(zip(frames, (1.0, -1.0))), metric=metric, domains=domains)
    values, clusters = PairedTables(frames).values(spec)
    return protocol, name, values, clusters


def _table_guards(table: Any, context: Any, profile: Optional[str]) -> Any:
    """The guards an arm's table is held to: its profile's (``--profile``, else ``gpu`` for a table
    of GPU-profile arms only, e.g. ``lm_m_base``; the GPU design has its own allowances)."""
    from negotiation.protocol import check_profile

    if profile is None:
        arms = set(table["arm"].unique()) if "arm" in table.columns else set()
        profile = "gpu" if arms and arms <= context.gpu_profile_arms() else "cpu"
    return context.protocol.for_profile(check_profile(profile)).guards


def contrast_command(
    minuend: Path = typer.Argument(..., help="Episode table (Parquet) of the arm whose score is the minuend."),
    subtrahend: Path = typer.Argument(..., help="Episode table (Parquet) of the arm subtracted from it."),
    metric: str = typer.Option("S", "--metric", help="Metric name (S, deal, seller_u, welfare, ...)."),
    resamples: Optional[int] = typer.Option(None, "--resamples", help="Bootstrap resamples (default: protocol)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap Generator."),
    domain: Optional[list[str]] = typer.Option(None, "--domain", help="Restrict to these domains (repeatable)."),
    study: str = STUDY,
    root: Optional[Path] = ROOT,
    json_out: bool = JSON_OPTION,
) -> None:
    """Paired seed-cluster bootstrap of MINUEND − SUBTRAHEND on one metric."""
    from negotiation.analysis import bootstrap_settings, cluster_bootstrap
    from negotiation.study import load_study

    protocol, name, values, clusters = _paired_values([minuend, subtrahend], metric, load_study(study, root),
                                                      domains=tuple(domain) if domain else None)
    settings = bootstrap_settings(protocol, seed=seed, resamples=resamples)
    interval = cluster_bootstrap(values, clusters, settings, np.random.default_rng(seed))
    payload = {"mean": interval.mean, "ci": list(interval.ci), "p": interval.p, "clusters": interval.clusters,
               "episodes": interval.episodes, "metric": metric, "resamples": interval.resamples,
               "rerun": interval.rerun, "mc_error": list(interval.mc_error), "level": interval.level, "seed": seed}
    if json_out:
        print_json(payload)
        return
    typer.echo(f"{name} on {metric}: {interval.mean:+.4f} [{interval.ci[0]:+.4f}, {interval.ci[1]:+.4f}] "
               f"({interval.level:.0%}), p = {interval.p:.4g}, {interval.clusters} seed clusters, "
               f"{interval.episodes} paired episodes, {interval.resamples} resamples"
               + (" (re-run: a bound sat in its Monte Carlo band)" if interval.rerun else ""))


def power_command(
    minuend: Path = typer.Argument(..., help="Episode table (Parquet) of a pilot arm (e.g. a base arm)."),
    subtrahend: Optional[Path] = typer.Argument(None, help="A second arm's table: its paired differences' spread "
                                                "is used; without it, sqrt(2) x the first arm's."),
    metric: str = typer.Option("S", "--metric", help="Metric name (S, deal, seller_u, welfare, ...)."),
    seeds: str = typer.Option("8,16,32,64", "--seeds", help="Designs: seed clusters per arm, comma-separated."),
    power: float = typer.Option(0.8, "--power", help="Probability of detecting the gain."),
    tests: Optional[int] = typer.Option(None, "--tests", help="Primary contrasts Holm runs over (default: protocol)."),
    trip_chance: float = typer.Option(0.05, "--trip-chance", help="False-trip chance the suggested guard allowances give."),
    study: str = STUDY,
    root: Optional[Path] = ROOT,
    profile: Optional[str] = PROFILE_OPTION,
    json_out: bool = JSON_OPTION,
) -> None:
    """Smallest paired gain a design of K seed clusters detects (Holm's first step, normal approximation).

    Also how often each guard fails an arm that equals MINUEND by chance alone, and the allowance
    that would fail it with probability --trip-chance (an input to a re-freeze)."""
    from negotiation.analysis import cluster_spread, guard_trip_table, power_table
    from negotiation.study import load_study

    designs = _seed_designs(seeds)
    paths = [minuend] if subtrahend is None else [minuend, subtrahend]
    context = load_study(study, root)
    protocol, name, values, clusters = _paired_values(paths, metric, context)
    spread, measured = cluster_spread(values, clusters, paired=subtrahend is not None)
    m, alpha = tests or len(protocol.statistics.primary_family), protocol.statistics.alpha
    rows = power_table(spread, designs, alpha=alpha, power=power, tests=m)
    if not 0 < trip_chance < 1:
        raise typer.BadParameter(f"{trip_chance!r}: a chance strictly between 0 and 1", param_hint="--trip-chance")
    table = _episode_table(minuend)
    guards = guard_trip_table(table, _table_guards(table, context, profile), designs, chance=trip_chance)
    payload = {"metric": metric, "spread": spread, "measured_clusters": measured, "paired": subtrahend is not None,
               "alpha": alpha, "tests": m, "power": power, "designs": [{"seeds": k, "mde": mde} for k, mde in rows],
               "trip_chance": trip_chance,
               "guard_false_trips": [{**g, "chances": [{"seeds": k, "chance": c} for k, c in g["chances"]],
                                      "allowances": [{"seeds": k, "allowance": a} for k, a in g["allowances"]]}
                                     for g in guards]}
    if json_out:
        print_json(payload)
        return
    typer.echo(f"{name} on {metric}: per-seed spread {spread:.4f} from {measured} seed clusters"
               f"{'' if subtrahend is not None else ' (one arm: x sqrt 2)'}; two-sided alpha {alpha:g} / {m}, "
               f"power {power:.0%}")
    for k, mde in rows:
        typer.echo(f"  {k:5d} seeds: detects a paired gain of {mde:.4f}")
    typer.echo(f"chance that an arm equal to {minuend.stem} trips a guard by noise alone "
               "(deal rate: an upper bound)")
    for g in guards:
        chances = ", ".join(f"{k} seeds {c:.1%}" for k, c in g["chances"])
        typer.echo(f"  {g['guard']} (allowance {g['allowance']:g}, per-seed spread {g['spread']:.4f}): {chances}")
        allowances = ", ".join(f"{k} seeds {a:.4g}" for k, a in g["allowances"])
        typer.echo(f"    allowance tripped {trip_chance:.0%} of the time: {allowances}")


def _seed_designs(text: str) -> list[int]:
    """``--seeds "8,16"`` as integers >= 2; anything else is a one-line error naming the value."""
    try:
        designs = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        designs = []
    if not designs or min(designs) < 2:
        raise ConfigError(f"--seeds:{text}: not a comma-separated list of seed counts, each >= 2")
    return designs


def frontier_command(
    domain: str = typer.Argument(..., help="Domain name, e.g. used_car."),
    seed: int = typer.Argument(..., help="Scenario seed."),
    study: str = STUDY,
    root: Optional[Path] = ROOT,
    json_out: bool = JSON_OPTION,
) -> None:
    """Exact Pareto frontier, Nash point and maximum welfare of one scenario (Ũ space)."""
    from negotiation.analysis import solve_scenario
    from negotiation.study import load_study
    from negotiation.env import load_domain, make_scenario

    alpha = load_study(study, root).protocol.environment.dirichlet_alpha
    try:
        loaded = load_domain(domain)
    except (FileNotFoundError, KeyError, ValueError) as err:
        raise AnalysisError("frontier", "domain", f"{domain!r}: {err}") from None
    summary = solve_scenario(make_scenario(loaded, seed, alpha)).summary(domain, seed)
    if json_out:
        print_json(summary.model_dump(mode="json"))
        return
    typer.echo(f"{domain} seed {seed}: Pareto frontier [seller Ũ, buyer Ũ] (polyline through):")
    for x, y in summary.pareto:
        typer.echo(f"  [{x:.4f}, {y:.4f}]")
    typer.echo(f"Nash point: [{summary.nash[0]:.4f}, {summary.nash[1]:.4f}]  (product {summary.nash[0] * summary.nash[1]:.4f})")
    typer.echo(f"maximum welfare: {summary.max_welfare:.4f}")
    typer.echo("Nash contract: " + json.dumps(jsonable(summary.nash_contract)))


def validate_command(study: str = STUDY, results: Optional[Path] = RESULTS, root: Optional[Path] = ROOT,
                     profile: Optional[str] = PROFILE_OPTION, arms: Optional[str] = ARMS, json_out: bool = JSON_OPTION) -> None:
    """Validate every arm's episode table (great-expectations); exit 1 naming failures."""
    from negotiation.analysis import validate_results

    context = _results_study(study, root, results, profile, arms)
    report = validate_results(context, _results_dir(context, results))
    if json_out:
        print_json(report.model_dump(mode="json"))
        if not report.success:
            raise typer.Exit(1)
        return
    for check in report.checks:
        typer.echo(f"{'ok  ' if check.success else 'FAIL'} {check.expectation}({check.column})"
                   + ("" if check.success else f": {check.unexpected_count} rows, e.g. {check.rows[:3]}"))
    typer.echo(f"Data Docs: {report.data_docs}")
    if not report.success:
        raise typer.Exit(1)


def analyze_command(
    study: str = STUDY, results: Optional[Path] = RESULTS, root: Optional[Path] = ROOT,
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap Generator."),
    resamples: Optional[int] = typer.Option(None, "--resamples", help="Bootstrap resamples (default: protocol)."),
    profile: Optional[str] = PROFILE_OPTION, arms: Optional[str] = ARMS, json_out: bool = JSON_OPTION,
) -> None:
    """Metrics, contrasts (Holm on the primary family), frontier columns and guards → analyze/."""
    from negotiation.analysis import analyze_results
    from negotiation.pipeline import registry_inputs
    from negotiation.study import ResultsLayout

    context = _results_study(study, root, results, profile, arms)
    result = analyze_results(context, _results_dir(context, results), registry_inputs(context), seed=seed,
                             resamples=resamples)
    if json_out:
        folder = ResultsLayout(_results_dir(context, results)).analyze
        print_json({"study": study, "analyze": str(folder), "files": sorted(p.name for p in folder.iterdir()),
               "contrasts": len(result.contrasts), "guards": len(result.guards), "solutions": len(result.solutions)})
        return
    typer.echo(f"{len(result.contrasts)} contrasts, {len(result.guards)} guards, "
               f"{len(result.solutions)} scenario frontiers written to {_results_dir(context, results)}")


def signoff_command(
    arm: str = typer.Argument(..., help="Arm whose transcripts were read."),
    reader: str = typer.Option(..., "--reader", help="Who read the transcripts."),
    verdict: str = typer.Option(..., "--verdict", help="pass or fail."),
    transcripts: int = typer.Option(..., "--transcripts", help="Transcripts read in total."),
    families: str = typer.Option("training,held_out", "--families", help="Domain families read, comma-separated."),
    notes: str = typer.Option("", "--notes", help="What the reader saw."),
    date: Optional[str] = typer.Option(None, "--date", help="ISO date of the reading (default today)."),
    study: str = STUDY,
    root: Optional[Path] = ROOT,
) -> None:
    """Record a reader's hand-read sign-off of an arm in registry/<study>/signoffs/<arm>.yaml."""
    from negotiation.registry import record_signoff
    from negotiation.study import load_study

    context = load_study(study, root)
    try:
        when = dt.date.fromisoformat(date) if date else dt.date.today()
    except ValueError as exc:
        raise ConfigError(f"--date:{date}: not an ISO date YYYY-MM-DD ({exc})") from exc
    path = record_signoff(context, arm, reader=reader, verdict=verdict, transcripts=transcripts,
                          families=tuple(f.strip() for f in families.split(",") if f.strip()), notes=notes, date=when)
    typer.echo(f"signed off {arm} ({verdict}) in {path}")


def report_command(
    study: str = STUDY, results: Optional[Path] = RESULTS, root: Optional[Path] = ROOT,
    out: Optional[Path] = typer.Option(None, "--out", help="Report folder (default <results>/report)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap Generator."),
    resamples: Optional[int] = typer.Option(None, "--resamples", help="Bootstrap resamples (default: protocol)."),
    profile: Optional[str] = PROFILE_OPTION, arms: Optional[str] = ARMS, json_out: bool = JSON_OPTION,
) -> None:
    """Validated tables → analysis → report.html, report.md, figures/*.png and transcripts.html."""
    from negotiation.analysis import report_results
    from negotiation.pipeline import registry_inputs

    context = _results_study(study, root, results, profile, arms)
    folder = _results_dir(context, results)
    inputs = registry_inputs(context, folder, seed=seed, resamples=resamples)
    paths = report_results(context, folder, out or folder / "report", inputs, seed=seed, resamples=resamples)
    if json_out:
        print_json({"study": study, "files": {name: str(path) for name, path in paths.items()}})
        return
    typer.echo(f"report: {paths['report.html']} and {paths['report.md']}")


def viewer_command(
    study: str = STUDY, results: Optional[Path] = RESULTS, root: Optional[Path] = ROOT,
    out: Optional[Path] = typer.Option(None, "--out", help="Page to write (default <results>/viewer.html)."),
    arm: Optional[list[str]] = typer.Option(None, "--arm", help="Arms to include (repeatable; default all)."),
    max_episodes: int = typer.Option(30000, "--max-episodes", help="Seeded sample of scenarios above this many episodes."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Static transcript viewer over the episode and turn tables."""
    from negotiation._atomic import refuse_non_regular
    from negotiation.study import load_study
    from negotiation.analysis import viewer_results

    if out is not None:
        refuse_non_regular(out)  # before reading any table: writing into a FIFO blocked for good
    context = load_study(study, root)
    folder = _results_dir(context, results)
    path = viewer_results(context, folder, out or folder / "viewer.html", arms=arm, max_episodes=max_episodes,
                          seed=seed)
    if json_out:
        print_json({"study": study, "viewer": str(path)})
        return
    typer.echo(f"viewer: {path}")


def packet_command(
    study: str = STUDY, results: Optional[Path] = RESULTS, root: Optional[Path] = ROOT,
    out: Optional[Path] = typer.Option(None, "--out", help="Packet folder (default <results>/hand_read)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the packet draw."),
) -> None:
    """Seeded hand-read packet: transcripts per trained arm per domain family, with a viewer."""
    from negotiation.study import load_study
    from negotiation.analysis import packet_results

    context = load_study(study, root)
    folder = _results_dir(context, results)
    paths = packet_results(context, folder, out or folder / "hand_read", seed=seed)
    typer.echo(f"packet: {paths['packet.csv']} and {paths['packet.html']}")


analysis_app = typer.Typer(name="analysis", help="Analysis of evaluated arms.", no_args_is_help=True,
                           add_completion=False, pretty_exceptions_show_locals=False)
for _name, _command in (("contrast", contrast_command), ("power", power_command), ("frontier", frontier_command),
                        ("validate", validate_command), ("analyze", analyze_command),
                        ("report", report_command), ("viewer", viewer_command), ("packet", packet_command),
                        ("signoff", signoff_command)):
    analysis_app.command(_name)(_command)
