"""The trainer's CSV writer against pandas' to_csv, the plain reference: identical bytes."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.training._csv import write_columns, write_rows

numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70),
                    st.sampled_from([0.0, -0.0, 5e-324, 1e16, 1e-4, 0.1 + 0.2, 2**53 + 1]))
names = st.text(alphabet=st.sampled_from('ab/_,"\n é'), min_size=1, max_size=6)
odd = st.one_of(st.booleans(), st.text(max_size=4), st.none())


def _pandas(tmp_path, frame: pd.DataFrame) -> bytes:
    frame.to_csv(tmp_path / "ref.csv", index=False)
    return (tmp_path / "ref.csv").read_bytes()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, st.one_of(st.lists(numbers, min_size=3, max_size=3),
                                        st.lists(st.integers(-5, 10**6), min_size=3, max_size=3),
                                        st.lists(st.one_of(numbers, odd), min_size=3, max_size=3)),
                       min_size=1, max_size=4))
def test_columns_are_written_as_pandas_writes_them(tmp_path_factory, columns):
    tmp = tmp_path_factory.mktemp("csv")
    write_columns(tmp / "ours.csv", columns)
    assert (tmp / "ours.csv").read_bytes() == _pandas(tmp, pd.DataFrame(columns))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["step", "train/loss", "x"]), st.one_of(numbers, odd), max_size=3),
                max_size=4))
def test_rows_are_written_as_pandas_writes_them(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("csv")
    write_rows(tmp / "ours.csv", rows)
    assert (tmp / "ours.csv").read_bytes() == _pandas(tmp, pd.DataFrame(rows))


def test_a_curves_table_takes_the_fast_path(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        assert name != "pandas", "the fast path must not import pandas"
        return real_import(name, *args, **kwargs)

    rows = [{"step": s, "combined_step": s + 8, "train/loss": -1.5 / s, "train/lr": 6e-4 * s} for s in range(1, 5)]
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    write_rows(tmp_path / "ours.csv", rows)
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert (tmp_path / "ours.csv").read_bytes() == _pandas(tmp_path, pd.DataFrame(rows))
