"""The study report: a self-contained HTML page and Markdown with PNG figures.

Built only from validated tables (``require_validated`` first): the paper's tables and
figures, the guard table, the held-out panel and the Pareto/Nash columns, then the tables the
caller appends (``RegistryInputs.appendix``: the deviation log and the audit's compliance table,
which the pipeline builds from the registry).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

from jinja2 import Environment
from markupsafe import Markup

from negotiation.analysis._analysis import AnalysisResult
from negotiation.analysis._figures import FIGURES
from negotiation.analysis._resample import backend
from negotiation.analysis._multiple import MARK_STYLE_GUARD
from negotiation.analysis._tables import (
    RegistryInputs, Report, Table, efficiency_table, guard_table, held_out_table, table1, table2,
    table3, table4, table5, table6,
)
from negotiation.analysis._tables_compute import table7, table8
from negotiation.analysis._tables_paper import (
    buyer_table, cost_table, guard_threshold_table, strategy_table, table1_paper, text_contrast_table,
    utility_parts_table,
)
from negotiation.study import Study

BUILDERS: tuple[Callable[[Report], Table], ...] = (
    table1_paper, table1, lambda r: table2(r, False), utility_parts_table, strategy_table, table3, table4, table5,
    buyer_table, table6, table7, cost_table, table8, lambda r: table2(r, True), text_contrast_table, guard_table,
    guard_threshold_table, held_out_table, efficiency_table,
)
"""Table builders in report order (Tables 7 and 8 have no rows for studies without LLM sizes)."""

# A table wider than the window scrolls in its own box (.wide), so the page keeps the window's width.
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}table{border-collapse:collapse;
margin:.5em 0 1.5em}td,th{border:1px solid #bbb;padding:.2em .5em;font-size:.85em;text-align:left}
th{background:#eef}caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}.fail{color:#b00;font-weight:600}.pending{color:#a60}
.wide{max-width:100%;overflow-x:auto}"""


def markdown_table(table: Table) -> str:
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = [f"**{table.caption}**", "", "| " + " | ".join(map(cell, table.headers)) + " |",
             "|" + "---|" * len(table.headers)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ css }}</style></head>
<body><h1>{{ title }}</h1>
<ul>{% for line in preamble %}<li>{{ line }}</li>{% endfor %}</ul>
{% for name, b64 in images %}<figure id="{{ name }}"><img alt="{{ name }}" src="data:image/png;base64,{{ b64 }}"></figure>
{% endfor %}
{% for t in tables %}
<div class="wide"><table id="{{ t.key }}"><caption>{{ t.caption }}</caption>
<thead><tr>{% for h in t.headers %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in t.rows %}<tr>{% for cell, href in row %}<td{% if cell in ("fail", "pending") %} class="{{ cell }}"{% endif %}>
{%- if href %}<a href="{{ href }}">{{ cell }}</a>{% else %}{{ cell }}{% endif %}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% endfor %}
</body></html>
"""


def transcript_links(table: Table, arms: dict[str, Any], bases: dict[str, str], viewer: str | None
                     ) -> list[list[tuple[str, str | None]]]:
    """Each cell with the viewer link behind it: an arm's name links to its episodes paired with its
    size's base arm and sorted by ΔS (the pairs behind its gain over base); other cells link nowhere."""
    rows = []
    for row in table.rows:
        cells = []
        for text in map(str, row):
            name = text.rstrip(MARK_STYLE_GUARD).strip()
            href = None
            if viewer and name in arms:
                base = bases.get(getattr(arms[name], "size", None))
                query = {"a": name, "b": base, "sort": "dS_asc"} if base and base != name else {"a": name}
                href = f"{viewer}?{urlencode(query)}"
            cells.append((text, href))
        rows.append(cells)
    return rows


def html_page(title: str, preamble: list[str], figures: dict[str, bytes], tables: list[Table],
              links: list[list[list[tuple[str, str | None]]]]) -> str:
    """The report page (jinja2, autoescaped: table text is data, never markup)."""
    images = [(name, base64.b64encode(png).decode()) for name, png in figures.items()]
    shown = [{"key": t.key, "caption": t.caption, "headers": t.headers, "rows": rows} for t, rows in zip(tables, links)]
    return _ENV.from_string(_PAGE).render(title=title, css=Markup(_CSS), preamble=preamble, images=images,
                                          tables=shown)


def _preamble(study: str, result: AnalysisResult, validation: Any) -> list[str]:
    s = result.settings
    reruns = sum(c.interval.rerun for c in result.contrasts)
    return [
        f"Study `{study}`: {len(result.arm_table)} arms, {int(result.arm_table['episodes'].sum())} episodes.",
        f"Validation: {'passed' if validation.success else 'FAILED'} ({len(validation.checks)} great-expectations "
        f"checks; Data Docs: {validation.data_docs}).",
        f"Intervals: percentile seed-cluster bootstrap, {s.resamples} resamples, level {s.level}, seed {s.seed}, "
        f"Holm at α = {s.alpha} over the primary family; {reruns} contrasts re-run at {s.rerun_resamples} resamples "
        f"because a bound sat within its Monte Carlo band (protocol band {s.mc_band}); resampler: {backend()}.",
        "Marks: * primary contrast surviving Holm; e exploratory interval excluding 0; † passes the prespecified "
        "guards but fails a post-hoc one.",
    ] + ([f"Not estimable (no scenario on which every arm closed a deal; shown as —): "
          f"{', '.join(result.not_estimable)}."] if result.not_estimable else [])


def build_report(result: AnalysisResult, study: Study, out_dir: Path, validation, registry: RegistryInputs,
                 transcripts: str | None = "transcripts.html") -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``figures/*.png`` under ``out_dir``; arm names in the
    tables link to the transcript viewer at ``transcripts`` (relative to the report; None: no links)."""
    out = Path(out_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    r = Report(result, study.protocol, study.arms, served=registry.served, guards=study.guard_rules)
    tables = [builder(r) for builder in BUILDERS] + list(registry.appendix)
    figures = {name: draw(r) for name, draw in FIGURES.items()}
    paths = {f"figures/{name}.png": out / "figures" / f"{name}.png" for name in figures}
    for name, png in figures.items():
        paths[f"figures/{name}.png"].write_bytes(png)
    title = f"Negotiation study report: {study.name}"
    preamble = _preamble(study.name, result, validation)
    md = [f"# {title}", "", *[f"- {line}" for line in preamble], ""]
    md += [f"![{name}](figures/{name}.png)\n" for name in figures]
    md += [markdown_table(t) for t in tables]
    paths["report.md"] = out / "report.md"
    paths["report.md"].write_text("\n".join(md), encoding="utf-8")
    links = [transcript_links(t, study.arms, r.bases, transcripts) for t in tables]
    page = html_page(title, preamble, figures, tables, links)
    paths["report.html"] = out / "report.html"
    paths["report.html"].write_text(page, encoding="utf-8")
    return paths
