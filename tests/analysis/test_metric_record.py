"""A report metric is one ``Metric`` record: the metrics table and the pairing read it from there.

The test adds one in a temporary module (one file: its value function and its registration) and
finds it in the metrics table, in a paired contrast and in the report's readings.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from negotiation.analysis import (METRICS, MetricError, context_from_protocol, metrics_table, paired_values,
                                  synthetic_tables, table_metrics)
from negotiation.study import load_study

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''
from negotiation.analysis import Metric, register_metric

def seller_turn_share(frame):
    return frame["n_seller_turns"].astype(float) / frame["n_turns"].astype(float)

register_metric(Metric("seller_turn_share", "share of turns the seller took", seller_turn_share, False,
                       "seller_turn_share_mean"))
'''


@pytest.fixture
def added_metric(tmp_path, monkeypatch):
    """The metric of ``MODULE``, registered by importing its one file; the registry is restored."""
    before = dict(METRICS)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "metric_x.py").write_text(MODULE)
    importlib.import_module("metric_x")
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".py"] == ["metric_x.py"]  # one file
    yield METRICS["seller_turn_share"]
    METRICS.clear()
    METRICS.update(before)


def test_a_registered_metric_reaches_the_metrics_table_and_the_pairing(added_metric):
    study = load_study("demo")
    episodes, _ = synthetic_tables(study.protocol, ["ref_boulware", "ref_conceder"], seed=3, with_turns=False)
    table = metrics_table(episodes, context_from_protocol(study.protocol))
    assert list(table_metrics())[-1] == "seller_turn_share_mean" and "seller_turn_share_mean" in table.columns
    overall = table[(table["arm"] == "ref_boulware") & (table["panel"] == "all")].iloc[0]
    frame = episodes["ref_boulware"]
    assert overall["seller_turn_share_mean"] == pytest.approx(added_metric.value(frame).mean())
    values = paired_values(episodes, {"ref_boulware": 1.0, "ref_conceder": -1.0}, "seller_turn_share")
    assert len(values) == len(frame)


def test_the_two_names_of_one_metric_are_fields_of_one_record():
    assert (METRICS["deal"].column, METRICS["n_turns"].column) == ("deal_rate", "mean_turns")
    assert not METRICS["at_cap"].pairable and METRICS["closes_late"].column == "late_close_share"


def test_a_table_only_metric_is_refused_by_a_contrast():
    study = load_study("demo")
    episodes, _ = synthetic_tables(study.protocol, ["ref_boulware", "ref_conceder"], seed=3, with_turns=False)
    with pytest.raises(MetricError, match="unknown metric 'at_cap'"):
        paired_values(episodes, {"ref_boulware": 1.0, "ref_conceder": -1.0}, "at_cap")


def test_the_architecture_table_says_a_metric_is_one_entry():
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    found = re.search(r"^- \*\*Add a report metric\*\*(.*?)(?=^- \*\*|^#|\Z)", text, re.M | re.S)
    row = " ".join(found.group(1).split()) if found else ""
    assert row.startswith("[1]") and "register_metric(Metric(" in row and "analysis/_metric_record.py" in row
