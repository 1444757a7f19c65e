"""Genius domains in and out, checked against NegMAS itself: scenarios NegMAS generated and wrote
are imported, and for random contracts NegMAS's normalised utilities equal ours."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from negotiation.env import export_genius, import_genius, load_domain, load_domain_file, make_scenario, u_tilde
from negotiation.errors import ConfigError

negmas = pytest.importorskip("negmas")
from negmas import make_issue, make_os  # noqa: E402
from negmas.inout import Scenario as NegmasScenario  # noqa: E402
from negmas.preferences import AffineFun, LinearAdditiveUtilityFunction, TableFun, make_discounted_ufun  # noqa: E402
from negmas.preferences.generators import generate_multi_issue_ufuns  # noqa: E402



def _generated(seed: int, n_issues: int, numeric_prob: float) -> NegmasScenario:
    """A scenario from NegMAS's own generator (seeded through the RNGs it uses)."""
    random.seed(seed)
    np.random.seed(seed)
    ufuns = generate_multi_issue_ufuns(n_issues, (2, 6), os_name=f"gen{seed}", ufun_names=("a", "b"),
                                       reserved_values=(0.0, 0.5), numeric_prob=numeric_prob)
    return NegmasScenario(outcome_space=ufuns[0].outcome_space, ufuns=ufuns)


def _with_real_issue() -> NegmasScenario:
    """A real issue with linear evaluations, an integer issue and a discounted party."""
    space = make_os([make_issue((10.0, 50.0), "Price"), make_issue(["red", "Blue green"], "Colour"),
                     make_issue(5, "Units")], name="mixed")
    seller = LinearAdditiveUtilityFunction(
        values=[AffineFun(slope=0.025, bias=-0.25), TableFun({"red": 1.0, "Blue green": 0.25}),
                TableFun({0: 0.0, 1: 0.2, 2: 0.3, 3: 0.9, 4: 1.0})],
        weights=[0.5, 0.3, 0.2], outcome_space=space, name="seller", reserved_value=0.2)
    buyer = LinearAdditiveUtilityFunction(
        values=[AffineFun(slope=-0.05, bias=3.0), TableFun({"red": 0.0, "Blue green": 4.0}),
                TableFun({0: 2.0, 1: 0.2, 2: 0.3, 3: 0.9, 4: 0.0})],
        weights=[2.0, 1.0, 0.5], outcome_space=space, name="buyer", reserved_value=0.1)
    buyer = make_discounted_ufun(buyer, discount_per_round=0.9, power_per_round=1.0)
    buyer.name, buyer.reserved_value = "buyer", 0.1  # NegMAS writes the wrapper's reservation
    return NegmasScenario(outcome_space=space, ufuns=(seller, buyer))


CASES = {"gen1": lambda: _generated(1, 3, -1), "gen2": lambda: _generated(2, 5, -1),
         "gen3": lambda: _generated(3, 7, -1), "gen4": lambda: _generated(4, 4, 0.5),
         "gen5": lambda: _generated(5, 6, 0.3), "mixed": _with_real_issue}


@functools.lru_cache(maxsize=None)
def _round_trip(case: str, base: str) -> tuple:
    """NegMAS writes the case's scenario, NegMAS loads it back, we import the same folder."""
    folder = Path(base) / case
    CASES[case]().to_genius_folder(folder)
    theirs = NegmasScenario.load(folder)
    ours = load_domain_file(import_genius(folder, case, Path(base) / "domains"))
    return theirs, ours


def _inner(theirs, role: str):
    """NegMAS's undiscounted utility function of ``role`` (named so, else in NegMAS's order)."""
    named = {u.name: u for u in theirs.ufuns}
    ufun = named[role] if set(named) == {"seller", "buyer"} else theirs.ufuns[("seller", "buyer").index(role)]
    return getattr(ufun, "ufun", ufun)


def _ledger(domain, outcome) -> dict:
    return {t.name: (float(v) if t.is_continuous else str(v)) for t, v in zip(domain.terms, outcome)}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("genius"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_normalised_utilities_equal_negmas_on_scenarios_negmas_wrote(case, base):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.randoms(use_true_random=False))
    def check(rng):
        theirs, ours = _round_trip(case, base)
        scenario = make_scenario(ours, 0)
        outcome = tuple(issue.rand() if issue.is_continuous() else rng.choice(list(issue.all))
                        for issue in theirs.outcome_space.issues)
        for role in ("seller", "buyer"):
            ufun = _inner(theirs, role)
            lo, hi = ufun.minmax()
            expected = (float(ufun(outcome)) - lo) / (hi - lo)
            assert u_tilde(ours, scenario.prefs(role), _ledger(ours, outcome)) == pytest.approx(expected, abs=1e-12)
            ranges = {t.name: t.range for t in ours.terms if t.is_continuous}
            raw = ours.profiles[role].raw_utility(_ledger(ours, outcome), ranges)
            assert raw == pytest.approx(float(ufun(outcome)), abs=1e-12)

    check()


def test_reservation_and_discount_are_imported(base):
    theirs, ours = _round_trip("mixed", base)
    assert ours.profiles["seller"].reservation == 0.2 and ours.profiles["seller"].discount is None
    assert ours.profiles["buyer"].reservation == 0.1 and ours.profiles["buyer"].discount == 0.9
    assert [t.name for t in ours.terms] == ["price", "colour", "units"]
    assert ours.term("units").levels == ("0", "1", "2", "3", "4")


@pytest.mark.parametrize("case", ["gen3", "mixed"])
def test_import_export_import_gives_the_same_domain(case, base, tmp_path):
    _, ours = _round_trip(case, base)
    export_genius(ours, tmp_path / "out")
    again = load_domain_file(import_genius(tmp_path / "out", case, tmp_path))
    shape = [(t.name, t.kind, t.range, t.levels, t.high_preferred_by) for t in ours.terms]
    assert [(t.name, t.kind, t.range, t.levels, t.high_preferred_by) for t in again.terms] == shape
    for role in ("seller", "buyer"):
        a, b = again.profiles[role], ours.profiles[role]
        assert a.weights == b.weights and a.evaluations == b.evaluations
        assert (a.reservation, a.discount) == (b.reservation, b.discount)
        for name, ends in a.ends.items():
            assert ends == pytest.approx(b.ends[name], abs=1e-12)


@pytest.mark.parametrize("name,seed", [("used_car", 5), ("acquisition", 0)])
def test_an_existing_domain_exported_and_reimported_keeps_its_preferences(name, seed, tmp_path):
    domain = load_domain(name)
    drawn = make_scenario(domain, seed)
    export_genius(domain, tmp_path / name, seed=seed)
    back = load_domain_file(import_genius(tmp_path / name, name, tmp_path))
    fixed = make_scenario(back, seed)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        ours, theirs = {}, {}
        for term in domain.terms:
            if term.is_continuous:
                ours[term.name] = theirs[term.name] = float(rng.uniform(*term.range))
            else:
                level = term.levels[int(rng.integers(len(term.levels)))]
                ours[term.name] = level
                theirs[term.name] = ("true" if level else "false") if isinstance(level, bool) else level
        for role in ("seller", "buyer"):
            want = u_tilde(domain, drawn.prefs(role), ours)
            assert u_tilde(back, fixed.prefs(role), theirs) == pytest.approx(want, abs=1e-12)


def test_bad_input_names_the_folder_and_what_is_wrong(tmp_path):
    with pytest.raises(ConfigError, match="not a folder"):
        import_genius(tmp_path / "missing", "x", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"empty: no Genius/NegMAS domain file"):
        import_genius(tmp_path / "empty", "x", tmp_path)
    broken = tmp_path / "broken"
    _generated(7, 3, -1).to_genius_folder(broken)
    (broken / "a.xml").write_text("<utility_space><objective><issue name='i1'>", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken"):
        import_genius(broken, "x", tmp_path)


def test_an_existing_file_is_kept_unless_forced(tmp_path):
    folder = tmp_path / "g"
    _generated(8, 3, -1).to_genius_folder(folder)
    target = import_genius(folder, "g", tmp_path)
    with pytest.raises(ConfigError, match=r"g\.yaml: already exists"):
        import_genius(folder, "g", tmp_path)
    assert import_genius(folder, "g", tmp_path, overwrite=True) == target
