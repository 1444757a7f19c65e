"""``nego domains | scenario | score | parse``: JSON shapes, hand-checked scores, one-line errors."""

from __future__ import annotations

import json

import pytest

from negotiation.cli import dirichlet_alpha_for
from negotiation.env import load_domain, make_scenario
from tests.cli.cli_runner import assert_one_line_error, nego, nego_json


def test_help_lists_every_command():
    out = nego("--help").stdout
    commands = ("domains", "scenario", "score", "parse", "play", "protocol", "audit", "deviation",
                "evaluate", "serve-standin")
    for command in commands:
        assert command in out
        assert nego(command, "--help").exit_code == 0


def test_mounted_groups_keep_their_subcommands():
    assert "freeze" in nego("protocol", "--help").stdout and "verify" in nego("protocol", "--help").stdout
    assert "new" in nego("deviation", "--help").stdout


def test_domains_json_counts_terms():
    rows = nego_json("domains")
    assert [r["name"] for r in rows][-1] == "used_car" and len(rows) == 9
    car = rows[-1]
    assert (car["terms"], car["continuous"], car["categorical"], car["binary"]) == (10, 4, 5, 1)
    assert all(r["terms"] == r["continuous"] + r["categorical"] + r["binary"] for r in rows)
    assert "used_car" in nego("domains").stdout


def test_scenario_json_shape_matches_the_scenario():
    payload = nego_json("scenario", "used_car", "5000053")
    expected = make_scenario(load_domain("used_car"), 5000053, dirichlet_alpha_for("demo"))
    assert (payload["domain"], payload["seed"]) == ("used_car", 5000053)
    price, model, accessories = payload["terms"][0], payload["terms"][1], payload["terms"][4]
    assert price == {"name": "price", "kind": "continuous", "range": [20.0, 60.0], "unit": "$k",
                     "seller_prefers": "high"}
    assert model["levels"] == ["Sedan", "SUV", "Hatchback", "Wagon"] and "range" not in model
    assert accessories == {"name": "accessories", "kind": "binary", "levels": [True, False]}
    warranty = next(t for t in payload["terms"] if t["name"] == "warranty_months")
    assert warranty["seller_prefers"] == "low"
    for role in ("seller", "buyer"):
        assert payload[role]["weights"] == dict(expected.prefs(role).weights)
        assert payload[role]["preferred"] == dict(expected.prefs(role).preferred)


def test_scenario_table_names_the_terms():
    out = nego("scenario", "job_offer", "3").stdout
    assert "base_salary" in out and "seller w" in out


def test_tables_print_cells_verbatim_in_aligned_columns(capsys):
    from negotiation.cli._output import _width, print_table

    print_table(("name", "value"), [("[bold]x[/bold]", "1"), ("日本", "22"), ("e\u0301", "333")], title="t [/x]")
    title, header, rule, *rows = capsys.readouterr().out.splitlines()
    assert title == "t [/x]" and rows[0].startswith("[bold]x[/bold]  ")  # no markup read from data
    starts = {_width(line[:line.rindex(value)]) for line, value in zip([header, *rows], ["value", "1", "22", "333"])}
    assert starts == {_width("[bold]x[/bold]  ")} and set(rule) == {"-", " "}


def test_score_by_hand():
    w = nego_json("scenario", "used_car", "9")["seller"]["weights"]["price"]
    mid = nego_json("score", "used_car", "9", "--ledger", '{"price": 40}')
    assert (mid["seller"], mid["buyer"]) == (0.5, 0.5)  # φ = 0 at the middle of the range
    top = nego_json("score", "used_car", "9", "--ledger", '{"price": 60, "sunroof": true}')
    assert top["seller"] == pytest.approx(0.5 + w / 2)
    assert top["flags"] == {"n_off_schema": 1, "n_invalid": 0, "n_out_of_range": 0}
    odd = nego_json("score", "used_car", "9", "--ledger", '{"price": 90, "model": "Truck"}')
    assert odd["seller"] == pytest.approx(0.5 + w / 2)  # clipped to 60; the unknown level unscored
    assert odd["flags"] == {"n_off_schema": 0, "n_invalid": 1, "n_out_of_range": 1}
    parts = odd["parts"]["seller"]
    assert parts["distributive"] + parts["integrative"] == pytest.approx(odd["seller"])


def test_score_text_output():
    out = nego("score", "used_car", "9", "--ledger", '{"price": 40}').stdout
    assert "seller Ũ = 0.5000" in out and "buyer  Ũ = 0.5000" in out


@pytest.mark.parametrize("args,fragments", [
    (("score", "used_car", "1", "--ledger", "{bad"), ("--ledger: invalid JSON at column 2", "'{bad'")),
    (("score", "used_car", "1", "--ledger", "[1, 2]"), ("--ledger: must be a JSON object", "got list")),
    (("score", "nope", "1", "--ledger", "{}"), ("nope.yaml: no such domain 'nope'", "used_car")),
    (("scenario", "nope", "1"), ("no such domain 'nope'",)),
    (("scenario", "used_car", "1", "--study", "ghost"), ("no study 'ghost'",)),
])
def test_malformed_input_is_one_line_and_exit_2(args, fragments):
    assert_one_line_error(nego(*args), *fragments)


def test_negative_seed_is_a_usage_error():
    result = nego("scenario", "used_car", "-1")
    assert result.exit_code == 2 and "Traceback" not in result.stderr


def test_parse_reads_stdin():
    text = 'Sedan at 40, deal? [Your Name]\n```json\n{"action": "COUNTER", "terms": [{"name": "price", "value": 40}]}\n```'
    payload = nego_json("parse", stdin=text)
    assert payload == {"ok": True, "action": "COUNTER", "terms": [{"name": "price", "value": 40}],
                       "prose": "Sedan at 40, deal? [Your Name]", "error": None, "notes": "",
                       "flags": {"json_leak": False, "placeholder": True, "template_tag": False}}
    bad = nego_json("parse", stdin='{"action": "COUNTER", "terms": []}')
    assert (bad["ok"], bad["error"], bad["action"]) == (False, "empty_counter", None)
    out = nego("parse", stdin="no json here").stdout
    assert "ok: False" in out and "error: no_action" in out


def test_parse_json_is_strict_json_even_for_odd_values():
    payload = nego("parse", "--json", stdin='{"action": "COUNTER", "terms": [{"name": "x", "value": NaN}]}')
    assert payload.exit_code == 0
    assert json.loads(payload.stdout)["terms"] == [{"name": "x", "value": None}]


def test_scenario_and_score_start_numpy_on_one_blas_thread_with_the_same_draws():
    """The two numpy commands leave OpenBLAS's thread pool unstarted (start-up), unless the
    caller set OPENBLAS_NUM_THREADS; the scenario is the same either way."""
    import os
    import subprocess
    import sys

    code = ("import os, sys; from negotiation.cli import main; sys.argv = ['nego', *sys.argv[1:]]\n"
            "try:\n    main()\nfinally:\n    print(os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")
    runs = {}
    for chosen in (None, "2"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        env.update({"OPENBLAS_NUM_THREADS": chosen} if chosen else {})
        done = subprocess.run([sys.executable, "-c", code, "scenario", "used_car", "5000053", "--json"], env=env,
                              capture_output=True, text=True, check=True)
        runs[chosen] = (done.stdout, done.stderr.strip().splitlines()[-1])
    assert runs[None][1] == "1" and runs["2"][1] == "2"
    assert runs[None][0] == runs["2"][0]
    assert json.loads(runs[None][0]) == nego_json("scenario", "used_car", "5000053")
