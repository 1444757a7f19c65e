"""Figures 2a/2b and 3a/3b as PNG bytes (matplotlib's object API, no global state)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from negotiation.analysis._tables import Report


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def _legend(axes) -> None:
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=7)


def _families(r: Report) -> dict[str, list[str]]:
    """Figure 2's families (``size_roles``): the shared-LR arm of the primary family and Table 1's
    higher-rate arm per size, labelled with the steps actually read, e.g. 'shared LR, 104 steps' and
    '3× LR, step 56'; intermediate reads and other rates are in Tables 4 and 5, as in the paper."""
    from negotiation.analysis._roles import size_roles, table_rate

    roles = size_roles(r.protocol, r.arms, list(r.arms))
    shared = [x.shared_final for x in roles.values() if x.shared_final]
    rate = table_rate(roles)
    high = [x.by_rate[rate] for x in roles.values()] if rate is not None else []
    steps = lambda names: "/".join(sorted({r.step(n) for n in names}, key=int))  # noqa: E731
    groups = {f"shared LR, {steps(shared)} steps": shared} if shared else {}
    if high:
        groups[f"{rate:g}× LR, step {steps(high)}"] = high
    return groups


def _error(lows_highs: list[tuple[float, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    values = np.array([v for v, _, _ in lows_highs])
    spread = np.array([[v - lo for v, lo, _ in lows_highs], [hi - v for v, _, hi in lows_highs]])
    return values, spread


def figure2a(r: Report) -> bytes:
    """Arm-level S per size: base, each trained family, references as horizontal lines."""
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    positions = {size: i for i, size in enumerate(r.sizes)}
    series = {"base": [n for n in r.of_kind("base")], **_families(r)}
    for offset, (label, names) in enumerate(series.items()):
        points = [(positions[r.arms[n].size], r.result.levels[n]) for n in names if n in r.result.levels]
        if not points:
            continue
        xs = np.array([x for x, _ in points]) + 0.06 * (offset - len(series) / 2)
        values, spread = _error([(i.mean, i.ci[0], i.ci[1]) for _, i in points])
        axes.errorbar(xs, values, yerr=spread, marker="o", capsize=3, label=label)
    for name in r.of_kind("reference"):
        if name in r.result.levels:
            axes.axhline(r.result.levels[name].mean, linestyle="--", linewidth=1, color="grey")
            axes.annotate(name, (len(r.sizes) - 0.5, r.result.levels[name].mean), fontsize=7, color="grey")
    axes.set_xticks(range(len(r.sizes)), r.sizes)
    axes.set_xlabel("size")
    axes.set_ylabel("attained S (arm mean, 95% interval)")
    axes.set_title("Figure 2a: attained score by size")
    _legend(axes)
    figure.tight_layout()
    return _png(figure)


def figure2b(r: Report) -> bytes:
    """Paired gain over base per size and family, with the primary marks as labels."""
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    families = _families(r)
    for offset, (label, names) in enumerate(families.items()):
        found = [(r.sizes.index(r.arms[n].size), r.contrasts.get(f"{n} - {r.bases.get(r.arms[n].size)}"))
                 for n in names]
        found = [(x, c) for x, c in found if c is not None]
        if not found:
            continue
        xs = np.array([x for x, _ in found]) + 0.08 * (offset - len(families) / 2)
        values, spread = _error([(c.interval.mean, c.interval.ci[0], c.interval.ci[1]) for _, c in found])
        axes.errorbar(xs, values, yerr=spread, marker="s", capsize=3, linestyle="", label=label)
        for x, (_, c) in zip(xs, found):
            if c.spec.primary:
                axes.annotate(f"{c.interval.mean:+.3f}{c.mark or ' n.s.'}", (x, c.interval.ci[1]), fontsize=7,
                              ha="center", va="bottom")
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(r.sizes)), r.sizes)
    axes.set_xlabel("size")
    axes.set_ylabel("paired difference from base (95% interval)")
    axes.set_title("Figure 2b: trained arms minus base")
    _legend(axes)
    figure.tight_layout()
    return _png(figure)


def figure3a_points(r: Report, size: str) -> list[tuple[int, str]]:
    """``(combined step, arm)`` of the shared-LR arms Figure 3a plots for ``size``: the last read of
    each run (the paper's intermediate point is where the continuation branches: 64 at 2.3B and
    12B, 56 at 4.5B and 31B, so an earlier read of the same run such as 31B's step 40 is left out)."""
    last: dict[str, tuple[int, str]] = {}
    for name in r.trained(size):
        if r.arms[name].lr_multiple == 1:
            point = (int(r.step(name)), name)
            last[r.arms[name].run] = max(last.get(r.arms[name].run, point), point)
    return sorted(last.values())


def figure3a(r: Report) -> bytes:
    """Gain over base against combined steps, shared-LR arms, one line per size."""
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    for size in r.sizes:
        base = r.bases.get(size)
        arms = figure3a_points(r, size)
        found = [(step, r.contrasts.get(f"{n} - {base}")) for step, n in arms]
        found = [(step, c) for step, c in found if c is not None]
        if not found:
            continue
        values, spread = _error([(c.interval.mean, c.interval.ci[0], c.interval.ci[1]) for _, c in found])
        axes.errorbar([0] + [s for s, _ in found], np.r_[0.0, values], yerr=np.c_[[0.0, 0.0], spread], marker="o",
                      capsize=3, label=size)
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.set_xlabel("combined optimizer steps")
    axes.set_ylabel("paired gain over base (95% interval)")
    axes.set_title("Figure 3a: gain against steps, shared learning rate")
    _legend(axes)
    figure.tight_layout()
    return _png(figure)


def figure3b(r: Report) -> bytes:
    """Smallest size: deal rate and deal-only Ũ across base and shared-LR read points."""
    figure = Figure(figsize=(7, 4.2))
    axes = figure.add_subplot()
    if not r.sizes:
        axes.text(0.5, 0.5, "no sized arms in this study", ha="center", va="center")
        axes.set_title("Figure 3b: deal rate and deal-only utility")
        return _png(figure)
    size = r.sizes[0]
    names = [r.bases[size]] * (size in r.bases) + sorted(
        (n for n in r.trained(size) if r.arms[n].lr_multiple == 1), key=lambda n: int(r.step(n)))
    steps = [0 if r.arms[n].kind == "base" else int(r.step(n)) for n in names]
    deal = [r.reading(n, "deal_rate") for n in names]
    utility = [r.reading(n, "seller_u") for n in names]
    axes.plot(steps, deal, marker="o", color="tab:blue", label="deal rate")
    axes.set_ylabel("deal rate", color="tab:blue")
    twin = axes.twinx()
    twin.plot(steps, utility, marker="s", color="tab:red", label="deal-only Ũ")
    twin.set_ylabel("deal-only Ũ", color="tab:red")
    axes.set_xlabel("combined optimizer steps (0 = base)")
    axes.set_title(f"Figure 3b: deal rate and deal-only utility at {size}")
    figure.tight_layout()
    return _png(figure)


FIGURES = {"figure2a": figure2a, "figure2b": figure2b, "figure3a": figure3a, "figure3b": figure3b}
"""Figure builders by file stem."""
