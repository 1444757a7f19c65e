"""great-expectations validation: a valid pair of arms passes; each defect names its rows."""

import pytest

from negotiation.analysis._errors import ValidationFailed
from negotiation.analysis._validate import ValidationSettings, require_valid, validate_episodes, validation_frame

from tests.analysis.frames import episode, frame

SETTINGS = ValidationSettings(arms=("A", "B"), episodes_per_arm=4, max_error_rows=0, no_deal_penalty=0.3,
                              turn_cap=24, pairing_key=("domain", "seed", "buyer"))


def arms(changes=None):
    rows = {name: [episode(name, d, s, b, deal=(s + len(b)) % 3 != 0, seller_u=0.4 + 0.1 * s)
                   for d in ("car",) for s in (1, 2) for b in ("x", "y")] for name in ("A", "B")}
    for (name, index), fields in (changes or {}).items():
        rows[name][index].update(fields)
    return {name: frame(r) for name, r in rows.items()}


def failing(report):
    return {check.expectation + ":" + check.column: check for check in report.checks if not check.success}


def test_valid_tables_pass_and_docs_are_written(tmp_path):
    report = validate_episodes(arms(), SETTINGS, docs_dir=tmp_path / "docs", study="demo")
    assert report.success, failing(report)
    require_valid(report)
    assert (tmp_path / "docs" / "index.html").exists()
    assert list((tmp_path / "docs" / "validations").rglob("*.html"))
    assert "20000101" in str(next((tmp_path / "docs" / "validations").rglob("*.html")))


def test_each_defect_is_named_with_its_rows():
    bad = arms({
        ("A", 0): {"outcome": "error", "S": float("nan")},
        ("B", 1): {"S": 1.5, "seller_u": 1.5},
        ("B", 2): {"n_turns": 30},
    })
    report = validate_episodes(bad, SETTINGS)
    found = failing(report)
    assert not report.success
    error = found["expect_column_values_to_be_in_set:outcome"]
    assert error.rows == [{"outcome": "error", "arm": "A", "domain": "car", "seed": 1, "buyer": "x"}]
    assert found["expect_column_values_to_be_between:S"].rows[0]["arm"] == "B"
    assert found["expect_column_values_to_be_between:n_turns"].unexpected_count == 1
    # B row 1 says S = 1.5 but is a deal whose parts sum to the old utility: inconsistent too.
    assert "expect_column_values_to_be_in_set:outcome_consistent" in found
    with pytest.raises(ValidationFailed, match=r"validation:expect_column_values_to_be_in_set\(outcome\): 1 "
                                               r"unexpected rows, e\.g\. outcome='error', arm='A'"):
        require_valid(report)


def test_pairing_and_counts():
    tables = arms()
    tables["B"] = tables["B"].iloc[:3]
    report = validate_episodes(tables, SETTINGS)
    found = failing(report)
    assert found["expect_column_values_to_be_between:arms_with_key"].unexpected_count == 1
    assert found["expect_column_values_to_be_between:episodes_in_arm"].unexpected_count == 3
    missing = validate_episodes({"A": arms()["A"]}, SETTINGS)
    assert "expect_column_distinct_values_to_equal_set:arm" in failing(missing)


def test_consistency_column_by_hand():
    tables = arms({("A", 1): {"deal": False}, ("A", 2): {"n_bad_seller": 99}})
    stacked = validation_frame(tables, SETTINGS)
    flags = stacked.loc[stacked["arm"] == "A", "outcome_consistent"].tolist()
    assert flags == [True, False, False, True]
