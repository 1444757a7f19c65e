"""Table 1 in the paper's layout and the contrasts the paper reports in its text (§5, App. C, E).

Rows come from ``size_roles`` (which arm plays which part at each size) and every cell from a
contrast ``run_analysis`` built (``default_contrasts`` and ``text_contrasts``), so a cell reads
'—' when its arms were not evaluated. Column labels state the steps the arms were actually read at.
"""

from __future__ import annotations

from negotiation.analysis._roles import ladder_pairs, size_roles, table_rate
from negotiation.analysis._tables import Report, Table, number, percent

__all__ = ["buyer_table", "cost_table", "frontier_cost_note", "guard_threshold_table", "size_label", "strategy_table", "table1_paper", "text_contrast_table", "utility_parts_table"]


def size_label(r: Report, size: str) -> str:
    """``2.3B`` from the protocol's effective parameters (LLM sizes), else the size's key."""
    params = getattr(r.protocol.sizes[size], "effective_params_b", None)
    return f"{params:.2g}B" if params else size


def _roles(r: Report):
    return size_roles(r.protocol, r.arms, list(r.arms))


def _steps(r: Report, names) -> str:
    return "/".join(sorted({r.step(n) for n in names if n}, key=int)) or "—"


def table1_paper(r: Report) -> Table:
    """Table 1: per size, the higher-rate arm's S, the shared-LR and higher-rate gains over base, and
    the higher rate against the shared LR at the early checkpoint and at the final read."""
    roles = _roles(r)
    m = table_rate(roles)
    if m is None:
        return Table("table1", "Table 1: no learning rate above the shared one is present at every size.", ["Size"])
    high = [x.by_rate[m] for x in roles.values()]
    early = [x.shared_early for x in roles.values()]
    final = [x.shared_final for x in roles.values()]
    t = Table("table1", f"Table 1: scores for the sizes at two learning rates over all domains, with pointwise 95% "
              f"seed-cluster intervals on paired within-scenario differences. The {m:g}× LR arms are read at step "
              f"{_steps(r, high)}; columns 5–6 compare them with the shared-LR arm of the same size at the early "
              f"checkpoint ({_steps(r, high)} v. {_steps(r, early)}) and at {_steps(r, final)} steps. * survives Holm "
              f"over the primary family (column 3); e exploratory interval excluding 0; † passes the prespecified "
              f"guards but fails a post-hoc one.",
              ["Size", f"{m:g}× LR S", "− base: shared LR", f"− base: {m:g}× LR",
               f"{m:g}× − shared: early ckpt ({_steps(r, high)} v. {_steps(r, early)})",
               f"{m:g}× − shared: @{_steps(r, final)} steps"])
    for size, role in roles.items():
        arm = role.by_rate[m]
        dagger = "†" if arm in r.result.dagger else ""
        t.rows.append([size_label(r, size), number(r.reading(arm, "S")),
                       r.cell(f"{role.shared_final} - {role.base}") if role.base and role.shared_final else "—",
                       r.cell(f"{arm} - {role.base}") if role.base else "—",
                       r.cell(f"{arm} - {role.shared_early}") if role.shared_early else "—",
                       (r.cell(f"{arm} - {role.shared_final}") + dagger) if role.shared_final else "—"])
    return t


def text_contrast_table(r: Report) -> Table:
    """Every between-arm contrast of §5 and Appendices C–E that is not a gain over base."""
    t = Table("text_contrasts", "Contrasts the paper reports in its text (exploratory, unadjusted): adjacent "
              "sizes (§5, App. C), reads of one run (§5, App. D), the reference sellers by panel (App. C), "
              "the gain differences between sizes (§1, App. A).",
              ["Contrast", "Where in the paper", "All domains", "Training domains", "Held out"])
    roles = _roles(r)
    for large, small in ladder_pairs(roles):
        t.rows.append([f"{r.label(large)} − {r.label(small)}", "§5 / App. C (adjacent sizes)",
                       r.cell(f"{large} - {small}"), "—", r.cell(f"{large} - {small} [held out]")])
    for name in r.trained():
        for other in r.trained():
            found = r.contrasts.get(f"{name} - {other}")
            if found and r.arms[name].run == r.arms[other].run:
                t.rows.append([f"{name} − {other}", "§5 / App. D (two reads of one run)", r.cell(found.spec.name),
                               "—", "—"])
    references = r.of_kind("reference")
    for i, first in enumerate(references):
        for second in references[i + 1:]:
            t.rows.append([f"{first} − {second}", "App. C (reference sellers by panel)", r.cell(f"{first} - {second}"),
                           r.cell(f"{first} - {second} [training]"), r.cell(f"{first} - {second} [held out]")])
    family = [(c.arm, c.reference) for c in r.protocol.statistics.primary_family]
    for (a1, b1), (a2, b2) in zip(family, family[1:]):
        t.rows.append([f"gain {a2} − gain {a1}", "§1 / App. A (gain differences)",
                       r.cell(f"({a2} - {b2}) - ({a1} - {b1})"), "—", "—"])
    return t


def buyer_table(r: Report) -> Table:
    """Each trained arm's gain over base against each evaluation buyer alone, and their difference."""
    buyers = list(dict.fromkeys(b for c in r.result.contrasts for b in (c.spec.buyers or ())))
    t = Table("buyers", "Gain over base against each evaluation buyer, and the difference (the gain's buyer split: "
              "same-family buyer minus the other), paired by scenario (App. E, exploratory).",
              ["Arm", *[f"− base vs {b}" for b in buyers], "Difference (buyer split of the gain)"])
    for name in r.trained():
        base = r.bases.get(r.arms[name].size)
        if base:
            t.rows.append([r.label(name), *[r.cell(f"{name} - {base} [vs {b}]") for b in buyers],
                           r.cell(f"{name} - {base} [buyer split]")])
    return t


def _share(part: float | None, whole: float | None) -> str:
    if part is None or whole is None or abs(whole) < 1e-12:
        return "—"
    return f"{100 * part / whole:.0f}%"


def utility_parts_table(r: Report) -> Table:
    """§5's split of the seller's deal-only gain: the buyer's change by term class, the seller's
    integrative-minus-distributive gap, and the shares the text quotes."""
    t = Table("utility_parts", "Where the seller's deal-only gain comes from (§5, exploratory, scenarios both arms "
              "closed): the buyer's change on integrative and distributive terms, the seller's integrative minus "
              "distributive change, the distributive share of the seller's gain and the buyer's loss as a share of "
              "it (ratios of the point estimates).",
              ["Arm", "Δ buyer Ũ integrative", "Δ buyer Ũ distributive", "Δ seller Ũ integrative − distributive",
               "Distributive share of seller gain", "Buyer's loss / seller gain"])
    for name in r.trained():
        base = r.bases.get(r.arms[name].size)
        if not base:
            continue
        mean = {m: getattr(r.contrasts.get(f"{name} - {base} [{m}]"), "interval", None)
                for m in ("seller_u", "seller_u_dist", "buyer_u")}
        mean = {m: None if i is None else i.mean for m, i in mean.items()}
        loss = None if mean["buyer_u"] is None else -mean["buyer_u"]
        t.rows.append([r.label(name), r.cell(f"{name} - {base} [buyer_u_integ]"),
                       r.cell(f"{name} - {base} [buyer_u_dist]"),
                       r.cell(f"{name} - {base} [seller_u_integ_minus_dist]"),
                       _share(mean["seller_u_dist"], mean["seller_u"]), _share(loss, mean["seller_u"])])
    return t


def guard_threshold_table(r: Report) -> Table:
    """Every guard's threshold and where it comes from: frozen in the protocol (the source states it)
    or this project's (``registry/<study>/guards.yaml`` or the schema's defaults)."""
    t = Table("guard_thresholds", "Guard thresholds and their source. A threshold from registry/<study>/guards.yaml "
              "or a schema default is this project's addition, not a value of the study's source (the paper gives "
              "no threshold for any guard).", ["Guard", "Kind", "Threshold", "Source"])
    rules = r.guards
    if rules is None:
        return t
    g, p = rules.prespecified, rules.post_hoc
    rows = [
        ("deal_rate", "prespecified", f"max drop {g.deal_rate.max_drop} while deal-only Ũ rises"),
        ("parse_rate", "prespecified", f"max rise {g.parse_rate.max_increase}"),
        ("turns", "prespecified", f"below {g.turns.max_fraction_of_cap} × cap, at most "
                                  f"+{g.turns.max_increase_over_base} over base"),
        ("hand_read", "prespecified", f"{g.hand_read.transcripts_per_domain_family} per domain family"
                                      f"{' (blocking)' if g.hand_read.blocking else ''}"),
        ("walk_aways", "post hoc", f"+{p.walk_away_increase}"), ("json_leakage", "post hoc", f"+{p.json_leak_increase}"),
        ("template_tags", "post hoc", f"at most {p.template_tags}"),
        ("placeholders", "post hoc", f"+{p.placeholder_increase} per episode"),
        ("buyer_family_split", "post hoc", f"+{p.buyer_split_increase}"),
        ("opener_concentration", "post hoc", f"not above both {p.opener_ratio}× and +{p.opener_increase}"),
        ("held_out_role_confusion", "post hoc",
         f"not above both {p.role_confusion_ratio}× and +{p.role_confusion_increase}"),
    ]
    for guard, kind, threshold in rows:
        source = rules.sources.get(guard, "—")
        mark = "frozen protocol" if source.startswith("protocol/") else "this project's"
        t.rows.append([guard, kind, threshold, f"{mark}: {source}"])
    return t


def strategy_table(r: Report) -> Table:
    """§5 and Appendices A and E: how the sellers open and close (post hoc, this project's detectors)."""
    t = Table("strategy", "How the sellers open and close (post hoc; §5, App. A, E): opens with terms (% of "
              "episodes), terms named at turn 1 (mean and share of the domain's, over openers), the seller's Ũ of "
              "that opening ledger, the closed deals' seller Ũ minus it, seller closing turns that name the "
              "concession the buyer's last turn made (%), off-schema names (% of names) and deals closing with "
              "one on the ledger (%).",
              ["Arm", "Opens with terms", "Terms at open", "Opening offer Ũ", "Deal − opening Ũ",
               "Closers naming the concession", "Off-schema names", "Deals with off-schema name"])
    strategy = getattr(r.result, "strategy", None)
    get = lambda arm, column: (strategy.loc[arm, column] if strategy is not None and arm in strategy.index  # noqa: E731
                               else None)
    for name in r.arms:
        terms = r.reading(name, "terms_at_open")
        share = r.reading(name, "open_term_share")
        t.rows.append([r.label(name), percent(r.reading(name, "opens_with_terms")),
                       "—" if terms is None else f"{number(terms, 1)} ({percent(share)}%)",
                       number(get(name, "open_offer_u")), number(get(name, "deal_minus_open_u"), 3, True),
                       percent(get(name, "closers_naming_concession")), percent(r.reading(name, "off_schema_share")),
                       percent(r.reading(name, "off_schema_deal_share"))])
    return t


def frontier_cost_note(r: Report) -> str:
    """Table 7's reference point: mean $ per episode over the frontier-seller cells, and the tokens."""
    costs = getattr(r.result, "costs", None)
    if costs is None or costs.empty:
        return "No reference seller was evaluated, so there is no API cost per episode."
    per_episode = costs["usd_per_episode"]
    tokens = f"{costs['tokens_in'].sum() / 1e6:.1f}M input and {costs['tokens_out'].sum() / 1e6:.1f}M output tokens"
    if per_episode.isna().any():
        return (f"The frontier cost per episode is not given: a cell lacks token counts or a model has no price in "
                f"registry/{r.protocol.study}/prices.yaml ({len(costs)} cells; {tokens}).")
    return (f"The reference point for the API-served sellers is ${per_episode.mean():.3f} per episode, the mean over "
            f"the {len(costs)} frontier-seller cells ({tokens}), both sides billed at "
            f"registry/{r.protocol.study}/prices.yaml (this project's prices; the paper states none).")


def cost_table(r: Report) -> Table:
    """Frontier cost per episode from token counts, per (reference seller, buyer) cell (Table 7, App. G)."""
    t = Table("frontier_cost", "Frontier cost per episode from token counts (Table 7's reference point): each "
              "(reference seller, buyer) cell, both sides billed. " + frontier_cost_note(r),
              ["Seller", "Buyer", "Episodes", "Input tokens (M)", "Output tokens (M)", "$ per episode"])
    costs = getattr(r.result, "costs", None)
    for row in ([] if costs is None else costs.itertuples()):
        t.rows.append([r.label(row.arm), row.buyer, str(row.episodes), number(row.tokens_in / 1e6, 2),
                       number(row.tokens_out / 1e6, 2), number(row.usd_per_episode)])
    return t
