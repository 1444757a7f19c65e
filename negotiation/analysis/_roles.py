"""The roles the paper's tables give each arm of a size, and the contrasts its text reports.

Table 1 and Figure 2 do not show every arm: per size they show the base, the shared-LR arm of
the primary family (104 combined steps), the shared-LR "early checkpoint" (the initial run's read
where its continuation branches: 64 at 2.3B and 12B, 56 at 4.5B and 31B) and one arm per higher
learning rate (the paper's 3× arm read at step 56, not the re-read of the same run at 64).
``size_roles`` derives those roles from the arms alone, so the demo study gets the same layout.

``text_contrasts`` are the exploratory contrasts the paper reports in its text and appendices
beyond the per-arm gains (§5, Appendices C and E): between adjacent sizes, between the reference
sellers by panel, per evaluation buyer, and on the buyer's and seller's utility parts. They are
appended after every other contrast, so adding them never changes the draws of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from negotiation.study import ContrastSpec, resolve_read_step

UTILITY_PARTS = ("buyer_u_integ", "buyer_u_dist", "seller_u_integ_minus_dist")
"""Deal-only metrics contrasted arm − base for the buyer's change by term class (§5: the buyer's change
on integrative terms) and the seller's integrative-minus-distributive gap."""


@dataclass(frozen=True)
class SizeRoles:
    """The arms one size contributes to the paper's tables."""

    size: str
    base: str | None = None
    """The size's base arm."""
    shared_final: str | None = None
    """The shared-LR arm of the primary family (the paper's 104-step arm)."""
    shared_early: str | None = None
    """The last read of the run ``shared_final`` continues (the early checkpoint of Table 1, column 5)."""
    by_rate: dict[float, str] = field(default_factory=dict)
    """LR multiple > 1 -> the earliest read of the size's run at that rate (later reads are re-reads)."""


def size_roles(protocol, arms: Mapping[str, Any], present: Sequence[str]) -> dict[str, SizeRoles]:
    """Roles per size, in the protocol's size order, over the arms in ``present``."""
    have = [n for n in present if n in arms]
    primary = {c.arm for c in protocol.statistics.primary_family}
    step = {n: resolve_read_step(protocol, arms[n]) for n in have if arms[n].kind == "trained"}
    out: dict[str, SizeRoles] = {}
    for size in protocol.sizes:
        mine = [n for n in have if arms[n].size == size]
        if not mine:
            continue
        base = next((n for n in mine if arms[n].kind == "base"), None)
        shared = sorted((n for n in step if n in mine and arms[n].lr_multiple == 1), key=lambda n: (step[n], n))
        final = next((n for n in shared if n in primary), shared[-1] if shared else None)
        parent = arms[final].parent_run if final else None
        early = [n for n in shared if parent and arms[n].run == parent]
        rates: dict[float, str] = {}
        for name in sorted((n for n in step if n in mine and arms[n].lr_multiple > 1), key=lambda n: (step[n], n)):
            rates.setdefault(arms[name].lr_multiple, name)
        out[size] = SizeRoles(size, base, final, early[-1] if early else None, dict(sorted(rates.items())))
    return out


def table_rate(roles: Mapping[str, SizeRoles]) -> float | None:
    """The higher learning rate Table 1 shows: the lowest multiple above 1 present at every size."""
    common = set.intersection(*(set(r.by_rate) for r in roles.values())) if roles else set()
    return min(common) if common else None


def _pair(a: str, b: str, held_out: Sequence[str]) -> list[ContrastSpec]:
    specs = [ContrastSpec(name=f"{a} - {b}", weights={a: 1.0, b: -1.0})]
    if held_out:
        specs.append(ContrastSpec(name=f"{a} - {b} [held out]", weights={a: 1.0, b: -1.0}, domains=tuple(held_out)))
    return specs


def ladder_pairs(roles: Mapping[str, SizeRoles]) -> list[tuple[str, str]]:
    """``(larger, smaller)`` arm pairs of adjacent sizes: the same role at each rate (shared-LR final and
    each higher rate's arm), then the larger size's early checkpoint against the smaller's final arm
    (Appendix C: 31B at step 56 against the 104-step 12B arm)."""
    ordered = list(roles.values())
    pairs: list[tuple[str, str]] = []
    for small, large in zip(ordered, ordered[1:]):
        if small.shared_final and large.shared_final:
            pairs.append((large.shared_final, small.shared_final))
        pairs += [(large.by_rate[m], small.by_rate[m]) for m in small.by_rate if m in large.by_rate]
        if large.shared_early and small.shared_final:
            pairs.append((large.shared_early, small.shared_final))
    return pairs


def text_contrasts(protocol, arms: Mapping[str, Any], present: Sequence[str], context) -> list[ContrastSpec]:
    """The contrasts §5 and Appendices C and E report that the per-arm families do not build.

    - adjacent sizes (``ladder_pairs``), pooled and on the held-out domains;
    - each pair of reference sellers on the training domains, pooled and held out (App. C: Sonnet 5 −
      Terra by panel);
    - every trained arm's gain over base against each evaluation buyer alone (App. E: the 10× arm's
      gain against Terra and against Sonnet 5; their difference is the ``[buyer split]`` contrast);
    - every trained arm's change in the buyer's integrative and distributive Ũ and in the seller's
      integrative-minus-distributive gap (§5), deal-only.
    """
    held_out = context.held_out_domains
    roles = size_roles(protocol, arms, present)
    specs: list[ContrastSpec] = []
    for large, small in ladder_pairs(roles):
        specs += _pair(large, small, held_out)
    references = [n for n in present if n in arms and arms[n].kind == "reference"]
    for i, first in enumerate(references):
        for second in references[i + 1:]:
            pair = {first: 1.0, second: -1.0}
            specs.append(ContrastSpec(name=f"{first} - {second} [training]", weights=pair,
                                      domains=tuple(context.training_domains)))
            specs += _pair(first, second, held_out)
    buyers = list(context.buyer_split or ())
    for role in roles.values():
        trained = [n for n in present if n in arms and arms[n].kind == "trained" and arms[n].size == role.size]
        for name in trained if role.base else ():
            pair = {name: 1.0, role.base: -1.0}
            specs += [ContrastSpec(name=f"{name} - {role.base} [vs {b}]", weights=pair, buyers=(b,)) for b in buyers]
            specs += [ContrastSpec(name=f"{name} - {role.base} [{m}]", weights=pair, metric=m) for m in UTILITY_PARTS]
    seen: set[str] = set()
    return [s for s in specs if not (s.name in seen or seen.add(s.name))]
