"""Holm against a hand-worked family and against closed testing on random families."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.analysis import SettingsError, holm, interval_mark


def test_hand_worked_family():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1, carried up to 0.06)
    # thresholds 0.0125, 0.0167, 0.025: the third fails, so only the first two are rejected.
    rejected, adjusted = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    assert rejected.tolist() == [True, False, False, True]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_paper_primary_family():
    # Appendix K: three gains at p <= 1.4e-4 survive thresholds 0.0125-0.025; 2.3B at 0.91 does not.
    rejected, _ = holm([0.91, 1.4e-4, 1e-4, 1e-4], alpha=0.05)
    assert rejected.tolist() == [False, True, True, True]


def test_step_down_stops_at_first_failure_even_if_later_p_is_small_enough():
    # 0.03 > 0.05/2 fails first, so 0.04 is retained although 0.04 <= 0.05/1 alone.
    rejected, _ = holm([0.03, 0.04], alpha=0.05)
    assert rejected.tolist() == [False, False]
    # 0.01 <= 0.025 passes, then 0.04 <= 0.05 passes.
    rejected, _ = holm([0.01, 0.04], alpha=0.05)
    assert rejected.tolist() == [True, True]


def closed_testing_reference(p, alpha):
    """Holm = closed testing with Bonferroni local tests: H_i is rejected iff every
    intersection containing i has min p <= alpha / |I|."""
    m = len(p)
    rejected = []
    for i in range(m):
        ok = True
        for size in range(1, m + 1):
            for subset in combinations(range(m), size):
                if i in subset and min(p[j] for j in subset) > alpha / size:
                    ok = False
        rejected.append(ok)
    return rejected


def adjusted_reference(p):
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=7), st.sampled_from([0.01, 0.05, 0.1]))
def test_matches_closed_testing_on_random_families(p, alpha):
    rejected, adjusted = holm(p, alpha)
    assert rejected.tolist() == closed_testing_reference(p, alpha)
    assert adjusted == pytest.approx(adjusted_reference(p))
    assert ((adjusted <= alpha) == rejected).all()


def test_bad_input_names_the_key():
    with pytest.raises(SettingsError, match=r"holm:pvalues: p-values outside \[0, 1\]"):
        holm([0.5, 1.2], alpha=0.05)
    with pytest.raises(SettingsError, match="holm:alpha: 1.5"):
        holm([0.5], alpha=1.5)


def test_marks():
    assert interval_mark(excludes_zero=True, primary=True, holm_rejected=True) == "*"
    assert interval_mark(excludes_zero=True, primary=True, holm_rejected=False) == ""
    assert interval_mark(excludes_zero=True, primary=False) == "e"
    assert interval_mark(excludes_zero=False, primary=False) == ""
