"""The paper's tables (1–6, 9), guards, held-out panel and Pareto/Nash columns, from data.

Each builder returns a ``Table``: a caption, column headers and rows of ready strings,
rendered to Markdown and HTML by ``_report``. Marks follow the paper: ``*`` primary
contrast surviving Holm, ``e`` exploratory interval excluding zero, ``†`` an arm that
passes the prespecified guards but fails a post-hoc one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from negotiation.analysis._analysis import AnalysisResult
from negotiation.analysis._multiple import MARK_STYLE_GUARD

PRESPECIFIED = ("deal_rate", "parse_rate", "turns", "hand_read")
POST_HOC = ("walk_aways", "json_leakage", "template_tags", "placeholders", "buyer_family_split",
            "opener_concentration", "held_out_role_confusion", "opener_concentration_vs_shared",
            "held_out_role_confusion_vs_shared")


@dataclass
class Table:
    """A rendered-agnostic table."""

    key: str
    caption: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class RegistryInputs:
    """What the analysis and report read from ``registry/<study>/``, passed in as arguments (the
    pipeline's ``registry_inputs`` builds it): the analysis does not import the registry."""

    signoffs: Mapping[str, Any]
    """Arm -> the reader's ``SignOff`` (the hand-read guard)."""
    served: Mapping[str, Any]
    """Arm -> the protocol it was served with: the frozen one plus its deviations' ``values``."""
    appendix: tuple[Table, ...] = ()
    """Tables the report shows after its own: the deviation log, the audit's compliance table."""


def number(value: Any, digits: int = 3, signed: bool = False) -> str:
    """A float as text, '—' when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def percent(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


class Report:
    """Lookups shared by the table builders: arms, contrasts by name, readings by arm."""

    def __init__(self, result: AnalysisResult, protocol, arms: dict[str, Any], served: Mapping[str, Any] | None = None,
                 guards: Any = None) -> None:
        """``served``: arm -> the protocol it was served with (the frozen one plus its deviations'
        ``values``, ``negotiation.registry.effective_protocol``); an arm missing from it was served
        under ``protocol``."""
        self.result, self.protocol, self.served, self.guards = result, protocol, dict(served or {}), guards
        present = list(result.arm_table.index)
        self.arms = {name: arms[name] for name in present if name in arms}
        self.contrasts = {c.spec.name: c for c in result.contrasts}
        self.table = result.arm_table
        self.sizes = [size for size in protocol.sizes if any(a.size == size for a in self.arms.values())]
        self.bases = {a.size: n for n, a in self.arms.items() if a.kind == "base"}

    def step(self, name: str) -> str:
        from negotiation.study import resolve_read_step

        arm = self.arms[name]
        return str(resolve_read_step(self.protocol, arm)) if arm.kind == "trained" else "—"

    def label(self, name: str) -> str:
        return name + (MARK_STYLE_GUARD if name in self.result.dagger else "")

    def trained(self, size: str | None = None) -> list[str]:
        return [n for n, a in self.arms.items() if a.kind == "trained" and (size is None or a.size == size)]

    def of_kind(self, kind: str) -> list[str]:
        return [n for n, a in self.arms.items() if a.kind == kind]

    def reading(self, name: str, column: str) -> Any:
        return self.table.loc[name, column] if column in self.table.columns else None

    def cell(self, name: str, interval: bool = True) -> str:
        """``+0.023* [+0.011, +0.035]`` for a contrast name, '—' when not run."""
        found = self.contrasts.get(name)
        if found is None:
            return "—"
        value = f"{found.interval.mean:+.3f}{found.mark}"
        return f"{value} [{found.interval.ci[0]:+.3f}, {found.interval.ci[1]:+.3f}]" if interval else value

    def level(self, name: str) -> str:
        found = self.result.levels.get(name)
        return "—" if found is None else f"{found.mean:.3f} [{found.ci[0]:.3f}, {found.ci[1]:.3f}]"


def table1(r: Report) -> Table:
    t = Table("table1_arms", "Table 1, every arm: every trained arm's paired gain over its size's base, and over the same size's "
              "lower-rate arms (95% seed-cluster intervals; * Holm-significant primary contrast, e exploratory "
              "interval excluding 0, † passes prespecified guards but fails a post-hoc one).",
              ["Size", "Arm", "LR ×", "Step", "S", "− base", "− lower LR (same size)"])
    for size in r.sizes:
        base = r.bases.get(size)
        for name in r.trained(size):
            lower = [o for o in r.trained(size) if r.arms[o].lr_multiple < r.arms[name].lr_multiple]
            versus = "; ".join(f"{o}: {r.cell(f'{name} - {o}')}" for o in lower) or "—"
            t.rows.append([size, r.label(name), f"{r.arms[name].lr_multiple:g}", r.step(name),
                           number(r.reading(name, "S")), r.cell(f"{name} - {base}") if base else "—", versus])
    return t


def table2(r: Report, intervals: bool) -> Table:
    key, number_ = ("table9", 9) if intervals else ("table2", 2)
    t = Table(key, f"Table {number_}: post-hoc descriptors over the scenarios both arms closed: opens with terms "
              "(% of episodes, base → arm) and paired deal-only differences from base; the Ũ parts sum to the "
              "seller's deal-only change and, with the buyer's, to the welfare change. All exploratory.",
              ["Size", "Arm", "Opens with terms", "Δ seller Ũ distributive", "Δ seller Ũ integrative",
               "Δ buyer Ũ", "Δ joint welfare"])
    for size in r.sizes:
        base = r.bases.get(size)
        for name in r.trained(size):
            opens = f"{percent(r.reading(base, 'opens_with_terms')) if base else '—'} → " \
                    f"{percent(r.reading(name, 'opens_with_terms'))}"
            cells = [r.cell(f"{name} - {base} [{m}]", intervals) if base else "—"
                     for m in ("seller_u_dist", "seller_u_integ", "buyer_u", "welfare")]
            t.rows.append([size, r.label(name), opens, *cells])
    return t


def table3(r: Report) -> Table:
    t = Table("table3", "Table 3: outcome decomposition of the base arms, the primary-family trained arms and "
              "the reference sellers (S with its arm-level 95% seed-cluster interval).",
              ["Seller", "Step", "S (all domains)", "Deal rate", "Deal-only Ũ", "Joint welfare"])
    primary = [c.arm for c in r.protocol.statistics.primary_family if c.arm in r.arms]
    for name in [*r.of_kind("base"), *primary, *r.of_kind("reference")]:
        t.rows.append([r.label(name), r.step(name), r.level(name), number(r.reading(name, "deal_rate")),
                       number(r.reading(name, "seller_u")), number(r.reading(name, "welfare"))])
    return t


def table4(r: Report) -> Table:
    t = Table("table4", "Table 4: every evaluated arm (S with arm-level 95% seed-cluster intervals; held out = the "
              "withheld domains; turns out of the cap; bad-parse over all turns).",
              ["Seller", "Kind", "Step", "S (all domains)", "S (held out)", "Deal rate", "Turns",
               "Bad-parse (all turns)"])
    for name in r.arms:
        t.rows.append([r.label(name), r.arms[name].kind, r.step(name), r.level(name), r.level(f"{name} [held out]"),
                       number(r.reading(name, "deal_rate")), number(r.reading(name, "mean_turns"), 1),
                       number(r.reading(name, "bad_parse_all"), 4)])
    return t


def table5(r: Report) -> Table:
    t = Table("table5", "Table 5: per size, base and trained arms on the prespecified deal-rate, parse and turn "
              "guards and the post-hoc buyer split (S against the same-family buyer minus the other).",
              ["Size", "Arm", "S", "Deal rate", "Deal-only Ũ", "Bad-parse (seller turns)", "Turns", "Buyer split"])
    for size in r.sizes:
        for name in [r.bases[size]] * (size in r.bases) + r.trained(size):
            t.rows.append([size, r.label(name), number(r.reading(name, "S")), number(r.reading(name, "deal_rate")),
                           number(r.reading(name, "seller_u")), number(r.reading(name, "bad_parse_seller"), 4),
                           number(r.reading(name, "mean_turns"), 2), number(r.reading(name, "buyer_split"), 3, True)])
    return t


def table6(r: Report) -> Table:
    t = Table("table6", "Table 6: buyer's-voice opener rate on the held-out domains (%, one lexical detector over "
              "every arm; compare within the table only). Reference sellers: " + ", ".join(
                  f"{n} {percent(r.reading(n, 'buyer_voice_held_out'))}%" for n in r.of_kind("reference")),
              ["Size", "Arm", "Role", "Buyer's-voice openers (held out)"])
    for size in r.sizes:
        for name in [r.bases[size]] * (size in r.bases) + r.trained(size):
            arm = r.arms[name]
            role = "base" if arm.kind == "base" else f"{arm.lr_multiple:g}× LR, step {r.step(name)}"
            t.rows.append([size, r.label(name), role, percent(r.reading(name, "buyer_voice_held_out"))])
    return t


def guard_table(r: Report) -> Table:
    t = Table("guards", "Guards per trained arm: the four prespecified ones then the post-hoc list, each against the "
              "same-size base; the two style diagnostics also against the same-size shared-LR arm of the primary "
              "family (_vs_shared, as App. E compares the 31B 3× arm with the 104-step arm). Thresholds and their "
              "sources: the guard-threshold table. pending = hand-read sign-off not yet given.",
              ["Arm", *[f"{g} (pre)" for g in PRESPECIFIED], *[f"{g} (post hoc)" for g in POST_HOC]])
    status = {(g.arm, g.guard): g.status for g in r.result.guards}
    for name in r.trained():
        t.rows.append([r.label(name), *[status.get((name, g), "—") for g in (*PRESPECIFIED, *POST_HOC)]])
    return t


def held_out_table(r: Report) -> Table:
    widths = [c.interval.half_width for n, c in r.contrasts.items() if n.endswith("[held out]")]
    median = sorted(widths)[len(widths) // 2] if widths else float("nan")
    t = Table("held_out", f"Held-out panel: each trained arm's gain over base on the withheld domains, with the "
              f"interval's half-width (median ±{number(median)}). {_doubling_note(r)}",
              ["Arm", "Gain on held-out domains", "Half-width"])
    for name in r.trained():
        found = r.contrasts.get(f"{name} - {r.bases.get(r.arms[name].size)} [held out]")
        t.rows.append([r.label(name), r.cell(found.spec.name) if found else "—",
                       number(found.interval.half_width) if found else "—"])
    return t


def doubling_arms(r: Report) -> list[str]:
    """Arms the held-out doubling rule tests, as the paper applies it (Appendix C: met "twice", by the
    104-step 31B arm and the 31B 3x arm): every trained arm of the trigger size except the
    intermediate checkpoints of a run another arm continues."""
    rule = r.protocol.held_out_doubling
    parents = {a.parent_run for a in r.arms.values() if a.parent_run}
    return [n for n in r.trained(rule.trigger_size) if r.arms[n].run not in parents]


def _doubling_note(r: Report) -> str:
    """Whether the protocol's held-out doubling rule fires: a tested arm of the trigger size has a
    held-out gain interval that straddles zero; each arm that meets it is named."""
    rule = r.protocol.held_out_doubling
    base = r.bases.get(rule.trigger_size)
    found = {a: r.contrasts.get(f"{a} - {base} [held out]") for a in doubling_arms(r)}
    found = {a: c for a, c in found.items() if c is not None}
    if not found:
        return f"Doubling rule: no held-out gain of a {rule.trigger_size} trained arm to test."
    met = [f"{a} {r.cell(c.spec.name)}" for a, c in found.items() if not c.interval.excludes_zero]
    if not met:
        return f"Doubling rule ({rule.trigger_size}, ×{rule.factor}): does not fire ({len(found)} arms tested)."
    return (f"Doubling rule ({rule.trigger_size}, ×{rule.factor}): met {len(met)} time{'s' if len(met) > 1 else ''} "
            f"— the interval straddles zero for {'; '.join(met)}.")


def efficiency_table(r: Report) -> Table:
    t = Table("pareto", "Pareto/Nash columns (deal-only means): signed distance to the exact full-contract "
              "frontier (+ inside, − beyond it through unnamed contested terms), distance to the Nash point, share "
              "of the maximum joint welfare, and each trained arm's paired change in that share.",
              ["Arm", "Frontier distance", "Nash distance", "Welfare share", "Δ welfare share vs base"])
    for name in r.arms:
        base = r.bases.get(r.arms[name].size)
        change = r.cell(f"{name} - {base} [welfare_share]") if r.arms[name].kind == "trained" and base else "—"
        t.rows.append([r.label(name), number(r.reading(name, "frontier_distance")),
                       number(r.reading(name, "nash_distance")), number(r.reading(name, "welfare_share")), change])
    return t
