"""Small hand-made episode and turn tables with the contract's columns (docs/architecture.md)."""

import json
import math

import pandas as pd

UNDECIDED = -0.3  # S of a no-deal, written out so the tables are hand-checkable


def episode(arm, domain, seed, buyer, *, deal=True, seller_u=0.6, buyer_u=0.5, seller_dist=None,
            buyer_dist=None, n_turns=10, n_seller_turns=None, n_bad_seller=0, n_bad_all=0,
            closing_turn=None, accept_had_terms=False, n_json_leak=0, n_placeholder=0,
            n_template_tag=0, n_off_schema=0, n_invalid=0, n_out_of_range=0, outcome=None,
            ledger=None, closed_by=None, study="demo"):
    """One episode row; utilities are NaN on a no-deal as the engine writes them."""
    nan = math.nan
    seller_dist = seller_u / 2 if seller_dist is None else seller_dist
    buyer_dist = buyer_u / 2 if buyer_dist is None else buyer_dist
    outcome = outcome or ("deal" if deal else "no_deal")
    return {
        "arm": arm, "study": study, "domain": domain, "seed": seed, "buyer": buyer,
        "seller": f"policy:{arm}", "phase": "eval", "outcome": outcome, "deal": deal,
        "S": (seller_u if deal else UNDECIDED) if outcome != "error" else nan,
        "seller_u": seller_u if deal else nan, "buyer_u": buyer_u if deal else nan,
        "seller_u_dist": seller_dist if deal else nan,
        "seller_u_integ": seller_u - seller_dist if deal else nan,
        "buyer_u_dist": buyer_dist if deal else nan,
        "buyer_u_integ": buyer_u - buyer_dist if deal else nan,
        "reward": seller_u if deal else UNDECIDED, "n_turns": n_turns, "n_rounds": math.ceil(n_turns / 2),
        "n_seller_turns": math.ceil(n_turns / 2) if n_seller_turns is None else n_seller_turns,
        "n_bad_seller": n_bad_seller, "n_bad_all": n_bad_all,
        "closed_by": (closed_by or ("buyer" if n_turns % 2 == 0 else "seller")) if deal else "",
        "closing_turn": (n_turns if closing_turn is None else closing_turn) if deal else nan,
        "accept_had_terms": accept_had_terms, "n_json_leak": n_json_leak,
        "n_placeholder": n_placeholder, "n_template_tag": n_template_tag,
        "n_off_schema": n_off_schema, "n_invalid": n_invalid, "n_out_of_range": n_out_of_range,
        "final_ledger": json.dumps(ledger or {}), "error_class": "RuntimeError" if outcome == "error" else "",
        "error_message": "boom" if outcome == "error" else "", "record_version": 1,
    }


def frame(rows):
    return pd.DataFrame(rows)


def turn(arm, domain, seed, buyer, turn_no, role, prose, *, ok=True, action="COUNTER", terms=(),
         ledger=None, json_leak=False, placeholder=False, template_tag=False, n_off_schema=0,
         n_invalid=0, n_out_of_range=0, error=""):
    """One turn row."""
    return {
        "arm": arm, "domain": domain, "seed": seed, "buyer": buyer, "turn": turn_no, "role": role,
        "raw": prose, "prose": prose, "ok": ok, "action": action if ok else "",
        "terms": json.dumps([list(t) for t in terms]), "error": error,
        "ledger_after": json.dumps(ledger or {}), "flag_json_leak": json_leak,
        "flag_placeholder": placeholder, "flag_template_tag": template_tag,
        "n_off_schema": n_off_schema, "n_invalid": n_invalid, "n_out_of_range": n_out_of_range,
    }
