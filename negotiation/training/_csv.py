"""``curves.csv`` and ``validation.csv`` as pandas writes them, without importing pandas.

A demo ``train@`` stage needs pandas only to write two small tables of numbers at its end, and
importing it costs ~0.8 CPU s of a ~17 s stage. These tables are columns of Python ints and
floats with every row holding the same keys, which ``DataFrame(...).to_csv(index=False)``
writes as: an all-int column as ``str``; a column with any float as float64 (ints widened)
in the shortest round-trip form, which is Python's ``repr``, NaN as an empty field; fields
through ``csv.writer`` (minimal quoting, ``\\n`` line ends). Anything else (other types,
ragged rows, ints beyond int64, an empty table) is handed to pandas itself, so the bytes are
pandas' either way; ``tests/training/test_csv.py`` checks the fast path against pandas.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

_INT64 = (-2**63, 2**63 - 1)


def _number_column(values: Sequence[Any]) -> list[str] | None:
    """The column's fields as pandas writes them, or ``None`` when it is not plain numbers."""
    kinds = {type(v) for v in values}
    if not kinds or not kinds <= {int, float}:
        return None
    if kinds == {int}:
        if not all(_INT64[0] <= v <= _INT64[1] for v in values):
            return None
        return [str(v) for v in values]
    if int in kinds and not all(abs(v) <= 2**53 for v in values if type(v) is int):
        return None  # widening would round: leave it to pandas
    return ["" if math.isnan(x) else repr(x) for x in map(float, values)]


def _fast_csv(columns: Mapping[str, Sequence[Any]]) -> str | None:
    if not columns or len({len(v) for v in columns.values()}) != 1:
        return None
    fields = []
    for values in columns.values():
        column = _number_column(values)
        if column is None:
            return None
        fields.append(column)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(columns))
    writer.writerows(zip(*fields))
    return out.getvalue()


def _columns_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]] | None:
    """Rows with identical keys in identical order as columns; ``None`` otherwise."""
    if not rows or any(list(row) != list(rows[0]) for row in rows):
        return None
    return {name: [row[name] for row in rows] for name in rows[0]}


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``pandas.DataFrame(rows).to_csv(path, index=False)``."""
    columns = _columns_of(rows)
    text = _fast_csv(columns) if columns is not None else None
    if text is None:
        import pandas as pd

        pd.DataFrame(list(rows)).to_csv(path, index=False)
        return
    Path(path).write_text(text, encoding="utf-8", newline="")


def write_columns(path: Path, columns: Mapping[str, Sequence[Any]]) -> None:
    """``pandas.DataFrame(columns).to_csv(path, index=False)``."""
    text = _fast_csv(columns)
    if text is None:
        import pandas as pd

        pd.DataFrame({k: list(v) for k, v in columns.items()}).to_csv(path, index=False)
        return
    Path(path).write_text(text, encoding="utf-8", newline="")
