"""Guards against hand-made per-arm readings: prespecified from the protocol, post hoc, the † mark."""

import datetime as dt
from types import SimpleNamespace

import pandas as pd
import pytest

from negotiation.analysis._guards import PostHocThresholds, run_guards, style_dagger
from negotiation.protocol._schema_eval import Guards
from negotiation.registry import SignOff

GUARDS = Guards.model_validate({
    "deal_rate": {"max_drop": 0.05}, "parse_rate": {"max_increase": 0.005},
    "turns": {"max_fraction_of_cap": 0.9, "max_increase_over_base": 2.0},
    "hand_read": {"transcripts_per_domain_family": 5, "blocking": False},
})
ARMS = {
    "w1_base": SimpleNamespace(kind="base", size="w1"),
    "w1_good": SimpleNamespace(kind="trained", size="w1"),
    "w1_bad": SimpleNamespace(kind="trained", size="w1"),
    "ref": SimpleNamespace(kind="reference", size=None),
}
BASE = dict(deal_rate=0.94, seller_u=0.47, bad_parse_seller=0.0007, mean_turns=11.9, walk_away_rate=0.0,
            json_leak_share=0.0, placeholders_per_episode=0.0, buyer_split=0.051, top_opener_share=0.16,
            buyer_voice_held_out=0.27, template_tag_count=0)


def table():
    good = {**BASE, "deal_rate": 0.948, "seller_u": 0.50, "bad_parse_seller": 0.0008, "mean_turns": 11.95,
            "buyer_split": 0.032, "top_opener_share": 0.30, "buyer_voice_held_out": 0.781}
    # the paper's 10x LR arm: deal rate -0.063 while deal-only U rises, seller parse rate +0.0275,
    # 14.37 turns (< 21.6 but +2.49 over base), leaks, placeholders and a +0.124 split excess.
    bad = {**BASE, "deal_rate": 0.876, "seller_u": 0.582, "bad_parse_seller": 0.0282, "mean_turns": 14.37,
           "walk_away_rate": 0.05, "json_leak_share": 0.916, "placeholders_per_episode": 131 / 1152,
           "buyer_split": 0.175, "top_opener_share": 0.534, "template_tag_count": 0}
    return pd.DataFrame({"w1_base": BASE, "w1_good": good, "w1_bad": bad, "ref": BASE}).T


def statuses(results, arm):
    return {r.guard: r.status for r in results if r.arm == arm}


def test_prespecified_and_post_hoc_guards():
    signoff = SignOff(version=1, arm="w1_good", reader="ana", date=dt.date(2026, 11, 30), transcripts_read=10,
                      domain_families=("training", "held_out"), verdict="pass")
    results = run_guards(table(), ARMS, GUARDS, 24, {"w1_good": signoff}, PostHocThresholds())
    assert {r.arm for r in results} == {"w1_good", "w1_bad"}
    assert statuses(results, "w1_bad") == {
        "deal_rate": "fail", "parse_rate": "fail", "turns": "fail", "hand_read": "pending",
        "walk_aways": "fail", "json_leakage": "fail", "placeholders": "fail", "buyer_family_split": "fail",
        "opener_concentration": "fail", "held_out_role_confusion": "pass", "template_tags": "pass"}
    good = statuses(results, "w1_good")
    assert [good[g] for g in ("deal_rate", "parse_rate", "turns", "hand_read")] == ["pass"] * 4
    # 0.30 > 1.5 x 0.16 and > 0.16 + 0.05; 0.781 > 2 x 0.27 and > 0.27 + 0.25
    assert good["opener_concentration"] == "fail" and good["held_out_role_confusion"] == "fail"
    assert style_dagger(results) == {"w1_good"}
    deal = next(r for r in results if r.arm == "w1_bad" and r.guard == "deal_rate")
    assert deal.value == pytest.approx(0.876 - 0.94) and deal.kind == "prespecified"


def test_blocking_hand_read_fails_and_missing_base_is_not_applicable():
    blocking = GUARDS.model_copy(update={"hand_read": GUARDS.hand_read.model_copy(update={"blocking": True})})
    no_base = table().drop(index="w1_base")
    results = run_guards(no_base, ARMS, blocking, 24, {}, PostHocThresholds())
    good = statuses(results, "w1_good")
    assert good["hand_read"] == "fail"
    assert good["deal_rate"] == "n/a" and good["template_tags"] == "pass"


def test_style_diagnostics_are_also_read_against_the_same_size_shared_arm():
    # App. E: the 31B 3x arm's top opener covers 30.3% of seller turns against the 104-step arm's 14.4%,
    # its held-out buyer's-voice openers 78.1% against 14.1%; it passes the four prespecified guards.
    base = {**BASE, "deal_rate": 1.0, "deal_u": 0.542, "mean_turns": 10.3, "top_opener_share": 0.25,
            "buyer_voice_held_out": 0.273}
    shared = {**base, "deal_u": 0.620, "mean_turns": 10.7, "top_opener_share": 0.144, "buyer_voice_held_out": 0.141}
    high = {**base, "deal_u": 0.623, "mean_turns": 7.3, "top_opener_share": 0.303, "buyer_voice_held_out": 0.781}
    frame = pd.DataFrame({"b": base, "s": shared, "h": high}).T
    arms = {"b": SimpleNamespace(kind="base", size="31b"), "s": SimpleNamespace(kind="trained", size="31b"),
            "h": SimpleNamespace(kind="trained", size="31b")}
    results = run_guards(frame, arms, GUARDS, 24, {}, PostHocThresholds(), comparators={"h": "s"})
    vs_shared = {r.guard: (r.status, r.value, r.base) for r in results if r.guard.endswith("_vs_shared")}
    assert vs_shared == {"opener_concentration_vs_shared": ("fail", 0.303, 0.144),
                         "held_out_role_confusion_vs_shared": ("fail", 0.781, 0.141)}
    assert [r.guard for r in results][-2:] == list(vs_shared)  # after every other row
    assert "h" in style_dagger(results)
