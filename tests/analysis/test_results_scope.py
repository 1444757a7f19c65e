"""A study scoped to some arms: what validation expects and the analysis contrasts."""

from __future__ import annotations

import pytest

from negotiation.analysis._errors import AnalysisError
from negotiation.analysis._results import scoped
from negotiation.analysis._validate import validation_settings
from negotiation.study import load_study


def test_scoped_study_expects_exactly_the_chosen_arms():
    every = load_study("lm")
    part = scoped(every, ["lm_m_base", "lm_m_shared", "ref_boulware"])
    assert set(part.arms) == {"lm_m_base", "lm_m_shared", "ref_boulware"} < set(every.arms)
    assert part.arms["lm_m_shared"] == every.arms["lm_m_shared"] and part.protocol == every.protocol
    assert set(validation_settings(part.protocol, list(part.arms)).arms) == set(part.arms)
    assert scoped(every, None) is every


@pytest.mark.parametrize("arms", [["lm_m_base", "no_such_arm"], []])
def test_a_scope_naming_no_or_unknown_arms_is_refused_by_name(arms):
    with pytest.raises(AnalysisError, match="no_such_arm|no arm"):
        scoped(load_study("lm"), arms)
