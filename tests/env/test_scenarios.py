"""Scenarios: Dirichlet(0.3) weights and preferred levels from the seed alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env import load_domain, load_domains, make_scenario

DOMAIN_NAMES = sorted(load_domains())


def _reference_draw(domain, seed, alpha=0.3):
    """The documented draw order, written out independently of the implementation."""
    streams = np.random.SeedSequence(seed).spawn(2)
    out = []
    for ss in streams:
        rng = np.random.Generator(np.random.PCG64(ss))
        w = rng.dirichlet([alpha] * len(domain.terms))
        levels = {t.name: t.levels[int(rng.integers(len(t.levels)))]
                  for t in domain.terms if not t.is_continuous}
        out.append((dict(zip(domain.term_names, map(float, w))), levels))
    return out


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_draw_follows_the_documented_order(name):
    domain = load_domain(name)
    scenario = make_scenario(domain, 5_000_053)
    (sw, sp), (bw, bp) = _reference_draw(domain, 5_000_053)
    assert dict(scenario.seller.weights) == sw and dict(scenario.seller.preferred) == sp
    assert dict(scenario.buyer.weights) == bw and dict(scenario.buyer.preferred) == bp


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(DOMAIN_NAMES), seed=st.integers(0, 2**63 - 1))
def test_same_seed_gives_the_identical_scenario(name, seed):
    domain = load_domain(name)
    a, b = make_scenario(domain, seed), make_scenario(domain, seed)
    assert a == b
    for prefs in (a.seller, a.buyer):
        assert list(prefs.weights) == list(domain.term_names)
        assert sum(prefs.weights.values()) == pytest.approx(1.0)
        assert all(w >= 0 for w in prefs.weights.values())
        integrative = [t for t in domain.terms if not t.is_continuous]
        assert set(prefs.preferred) == {t.name for t in integrative}
        assert all(prefs.preferred[t.name] in t.levels for t in integrative)


def test_seeds_differ_and_parties_draw_independently():
    domain = load_domain("used_car")
    a, b = make_scenario(domain, 1), make_scenario(domain, 2)
    assert dict(a.seller.weights) != dict(b.seller.weights)
    assert dict(a.seller.weights) != dict(a.buyer.weights)
    assert a.key == ("used_car", 1) and a.alpha == 0.3
    assert a.prefs("seller") is a.seller and a.prefs("buyer") is a.buyer


def test_alpha_is_an_explicit_input():
    domain = load_domain("used_car")
    peaked = make_scenario(domain, 11, alpha=0.05)
    flat = make_scenario(domain, 11, alpha=50.0)
    assert max(peaked.seller.weights.values()) > max(flat.seller.weights.values())
    assert max(flat.seller.weights.values()) < 0.3


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_bad_seed_is_rejected(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        make_scenario(load_domain("used_car"), bad)
