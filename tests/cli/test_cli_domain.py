"""``nego domain import genius`` and ``nego domain export``: a shipped domain out to Genius XML
through NegMAS and back in, and bad input as one ``error:`` line naming the file."""

from __future__ import annotations

import pytest

from negotiation.env import load_domain, load_domain_file, make_scenario, u_tilde
from tests.cli.cli_runner import assert_one_line_error, nego, nego_json

pytest.importorskip("negmas")


def test_export_then_import_round_trips_a_shipped_domain(tmp_path):
    out = nego("domain", "export", "used_car", str(tmp_path / "car"), "--seed", "5")
    assert out.exit_code == 0, out.stderr
    assert [line.split("/")[-1] for line in out.stdout.split()[1::2]] == ["used_car.xml", "seller.xml", "buyer.xml"]
    data = nego_json("domain", "import", "genius", str(tmp_path / "car"), "--name", "car",
                     "--domains-dir", str(tmp_path / "domains"))
    back = load_domain_file(tmp_path / "domains" / "car.yaml")
    assert data["path"].endswith("car.yaml") and data["terms"] == list(back.term_names)
    car, drawn = load_domain("used_car"), make_scenario(load_domain("used_car"), 5)
    ledger = {t.name: (float(t.range[1]) if t.is_continuous else t.levels[0]) for t in car.terms}
    as_text = {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in ledger.items()}
    for role in ("seller", "buyer"):
        assert u_tilde(back, make_scenario(back, 0).prefs(role), as_text) == pytest.approx(
            u_tilde(car, drawn.prefs(role), ledger), abs=1e-12)


def test_import_refuses_to_overwrite_and_names_the_file(tmp_path):
    nego("domain", "export", "used_car", str(tmp_path / "car"))
    args = ("domain", "import", "genius", str(tmp_path / "car"), "--domains-dir", str(tmp_path))
    assert nego(*args).exit_code == 0
    assert_one_line_error(nego(*args), "car.yaml", "already exists", "--force")
    assert nego(*args, "--force").exit_code == 0


def test_a_folder_without_a_scenario_is_one_line_naming_it(tmp_path):
    (tmp_path / "nothing").mkdir()
    assert_one_line_error(nego("domain", "import", "genius", str(tmp_path / "nothing"), "--domains-dir",
                               str(tmp_path)), "nothing", "no Genius/NegMAS domain file")
    assert_one_line_error(nego("domain", "export", "no_such_domain", str(tmp_path / "x")), "no_such_domain")
