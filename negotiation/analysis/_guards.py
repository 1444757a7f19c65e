"""Guards: the four prespecified ones (protocol thresholds) and the post-hoc list.

Every trained arm is compared with the base arm of its size. A guard's status is
``pass``, ``fail``, ``pending`` (hand-read guard without a sign-off, when the protocol
does not make it blocking) or ``n/a`` (a value is missing, e.g. no base arm).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Literal, Mapping

import pandas as pd
from pydantic import BaseModel, ConfigDict

from negotiation.study import PostHocThresholds

Status = Literal["pass", "fail", "pending", "n/a"]


class GuardResult(BaseModel):
    """One guard on one arm."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    arm: str
    """Trained arm checked."""
    guard: str
    """Guard name."""
    kind: Literal["prespecified", "post_hoc"]
    """Whether the protocol fixed the guard before any arm ran."""
    status: Status
    """Outcome."""
    value: float | None
    """The arm's reading (a difference from base where the rule is a difference)."""
    base: float | None
    """The base arm's reading, when the rule compares with it."""
    rule: str
    """The rule in words, with its threshold."""


def _number(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _result(arm: str, guard: str, kind: str, ok: bool | None, value: Any, base: Any, rule: str) -> GuardResult:
    status = "n/a" if ok is None else ("pass" if ok else "fail")
    return GuardResult(arm=arm, guard=guard, kind=kind, status=status, value=_number(value), base=_number(base),
                       rule=rule)


def _compare(arm_row: pd.Series, base_row: pd.Series | None, column: str) -> tuple[float | None, float | None]:
    value = _number(arm_row.get(column))
    base = _number(base_row.get(column)) if base_row is not None else None
    return value, base


def prespecified_guards(arm: str, row: pd.Series, base: pd.Series | None, guards, turn_cap: int,
                        signoff) -> list[GuardResult]:
    """The protocol's four guards for one trained arm (``guards`` is ``protocol.guards``)."""
    out = []
    deal, deal_base = _compare(row, base, "deal_rate")
    utility, utility_base = _compare(row, base, "seller_u")
    known = None not in (deal, deal_base, utility, utility_base)
    collapsed = known and deal - deal_base < -guards.deal_rate.max_drop and utility > utility_base
    out.append(_result(arm, "deal_rate", "prespecified", (not collapsed) if known else None,
                       deal - deal_base if known else None, deal_base,
                       f"deal rate may not fall by more than {guards.deal_rate.max_drop} while deal-only Ũ rises"))
    parse, parse_base = _compare(row, base, "bad_parse_seller")
    ok = None if None in (parse, parse_base) else parse - parse_base <= guards.parse_rate.max_increase
    out.append(_result(arm, "parse_rate", "prespecified", ok, None if ok is None else parse - parse_base, parse_base,
                       f"seller bad-parse rate may rise by at most {guards.parse_rate.max_increase}"))
    turns, turns_base = _compare(row, base, "mean_turns")
    cap = guards.turns.max_fraction_of_cap * turn_cap
    ok = None if None in (turns, turns_base) else (
        turns < cap and turns - turns_base <= guards.turns.max_increase_over_base)
    out.append(_result(arm, "turns", "prespecified", ok, turns, turns_base,
                       f"mean turns below {cap:g} and at most {guards.turns.max_increase_over_base:g} above base"))
    out.append(_hand_read(arm, signoff, guards.hand_read))
    return out


def _hand_read(arm: str, signoff, rule) -> GuardResult:
    text = f"{rule.transcripts_per_domain_family} transcripts per domain family read and signed off"
    if signoff is None:
        status: Status = "fail" if rule.blocking else "pending"
        return GuardResult(arm=arm, guard="hand_read", kind="prespecified", status=status, value=None, base=None,
                           rule=text + (" (blocking)" if rule.blocking else " (pending until a reader signs)"))
    return GuardResult(arm=arm, guard="hand_read", kind="prespecified", status=signoff.verdict, value=None,
                       base=None, rule=f"{text}: {signoff.reader} on {signoff.date}")


def _rise(limit: float) -> Callable[[float, float], bool]:
    return lambda value, base: value - base <= limit


def _ratio_and_rise(ratio: float, rise: float) -> Callable[[float, float], bool]:
    return lambda value, base: not (value > base * ratio and value > base + rise)


def post_hoc_guards(arm: str, row: pd.Series, base: pd.Series | None, limits: PostHocThresholds) -> list[GuardResult]:
    """The post-hoc list for one trained arm, each against the base arm of its size."""
    checks = [
        ("walk_aways", "walk_away_rate", _rise(limits.walk_away_increase),
         f"walk-away rate at most {limits.walk_away_increase} above base"),
        ("json_leakage", "json_leak_share", _rise(limits.json_leak_increase),
         f"JSON-leaking seller turns at most {limits.json_leak_increase} above base"),
        ("placeholders", "placeholders_per_episode", _rise(limits.placeholder_increase),
         f"unfilled placeholders per episode at most {limits.placeholder_increase} above base"),
        ("buyer_family_split", "buyer_split", _rise(limits.buyer_split_increase),
         f"same-family buyer split at most {limits.buyer_split_increase} above base"),
        ("opener_concentration", "top_opener_share", _ratio_and_rise(limits.opener_ratio, limits.opener_increase),
         f"top opener share not above both {limits.opener_ratio}x and +{limits.opener_increase} of base"),
        ("held_out_role_confusion", "buyer_voice_held_out",
         _ratio_and_rise(limits.role_confusion_ratio, limits.role_confusion_increase),
         f"held-out buyer's-voice openers not above both {limits.role_confusion_ratio}x and "
         f"+{limits.role_confusion_increase} of base"),
    ]
    out = []
    for guard, column, passes, rule in checks:
        value, reference = _compare(row, base, column)
        ok = None if None in (value, reference) else passes(value, reference)
        out.append(_result(arm, guard, "post_hoc", ok, value, reference, rule))
    tags = _number(row.get("template_tag_count"))
    out.append(_result(arm, "template_tags", "post_hoc", None if tags is None else tags <= limits.template_tags,
                       tags, None, f"at most {limits.template_tags} template-tag leaks"))
    return out


STYLE_GUARDS = ("opener_concentration", "held_out_role_confusion")
"""The post-hoc style diagnostics, which the paper also reads against the same-size shared-LR arm."""


def style_against(arm: str, row: pd.Series, comparator: str, other: pd.Series, limits: PostHocThresholds
                  ) -> list[GuardResult]:
    """The style diagnostics of ``arm`` against ``comparator`` (App. E: the 31B 3× arm's top opener
    covers 30.3% of seller turns against the 104-step arm's 14.4%, its held-out buyer's-voice openers
    78.1% against 14.1%); guard names carry the suffix ``_vs_shared``."""
    rows = [result for result in post_hoc_guards(arm, row, other, limits) if result.guard in STYLE_GUARDS]
    return [result.model_copy(update={"guard": f"{result.guard}_vs_shared",
                                      "rule": f"{result.rule.replace('of base', f'of {comparator}')}"})
            for result in rows]


def run_guards(arm_table: pd.DataFrame, arms: Mapping[str, Any], guards, turn_cap: int,
               signoffs: Mapping[str, Any], limits: PostHocThresholds,
               comparators: Mapping[str, str] | None = None) -> list[GuardResult]:
    """Every guard on every trained arm present in ``arm_table`` (indexed by arm).

    Args:
      arm_table: per-arm readings (outcome metrics, style and descriptor shares).
      arms: arm name -> protocol ``Arm`` (``kind``, ``size``), frozen and added arms.
      guards: ``protocol.guards``.
      signoffs: arm name -> registry ``SignOff``.
      comparators: trained arm -> the same-size shared-LR arm its style diagnostics are also read
        against (``_vs_shared`` rows, after every other guard row).
    """
    bases = {arm.size: name for name, arm in arms.items() if arm.kind == "base" and name in arm_table.index}
    results = []
    for name in arm_table.index:
        arm = arms.get(name)
        if arm is None or arm.kind != "trained":
            continue
        base = arm_table.loc[bases[arm.size]] if arm.size in bases else None
        row = arm_table.loc[name]
        results += prespecified_guards(name, row, base, guards, turn_cap, signoffs.get(name))
        results += post_hoc_guards(name, row, base, limits)
    for name, comparator in (comparators or {}).items():
        if name in arm_table.index and comparator in arm_table.index:
            results += style_against(name, arm_table.loc[name], comparator, arm_table.loc[comparator], limits)
    return results


def style_dagger(results: list[GuardResult]) -> set[str]:
    """Arms marked †: no prespecified guard failed, but a post-hoc one did."""
    arms = {r.arm for r in results}
    failed = lambda arm, kind: any(r.arm == arm and r.kind == kind and r.status == "fail" for r in results)  # noqa: E731
    return {arm for arm in arms if not failed(arm, "prespecified") and failed(arm, "post_hoc")}
