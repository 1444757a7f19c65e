"""``ledger_changes``: the one rule for what a turn changed on the ledger, against its definition."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from negotiation.env import ledger_changes

NAMES = st.sampled_from(["price", "service", "color", "warranty", "delivery_day"])
VALUES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.sampled_from(["annual", "Black", ""]),
                   st.booleans())
LEDGERS = st.dictionaries(NAMES, VALUES, max_size=5)


def test_new_and_changed_terms_count_unchanged_ones_do_not():
    before = {"price": 40, "service": "annual"}
    after = {"price": 38, "service": "annual", "color": "Black"}
    assert ledger_changes(before, after) == {"price": 38, "color": "Black"}
    assert ledger_changes({}, after) == after
    assert ledger_changes(after, after) == {}


def test_a_nan_value_always_counts_as_a_change():
    # NaN != NaN: a ledger holding an invalid float never reads as unchanged
    nan = float("nan")
    assert list(ledger_changes({"price": nan}, {"price": nan})) == ["price"]


@given(LEDGERS, LEDGERS)
def test_changes_rebuild_the_new_ledger_and_keep_its_order(before, after):
    changed = ledger_changes(before, after)
    assert list(changed) == [name for name in after if name in changed]
    for name, value in after.items():
        if name not in changed:
            assert name in before and before[name] == value
    rebuilt = {name: changed.get(name, before.get(name)) for name in after}
    assert all(rebuilt[n] is after[n] or rebuilt[n] == after[n] for n in after)
