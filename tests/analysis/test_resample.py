"""The tuple-table resampler: exact distribution, numba == numpy decoder, rare-row fallback."""

import numpy as np
import pytest

from negotiation.analysis import _resample as resample
from negotiation.analysis._resample import backend, plan_phases, resample_totals, tuple_table


def test_plan_for_64_clusters_uses_pair_sums_without_rejection():
    multi, single, t = plan_phases(64)
    assert t == 2 and (multi.size, multi.picks, multi.bits, multi.words) == (4096, 32, 12, 7)
    assert single.picks == 0


def test_plan_for_3_clusters_uses_triples_with_rejection():
    multi, single, t = plan_phases(3)
    # 3^3 = 27 sums in 5-bit fields (12 per word), acceptance 27/32; 3^4 would exceed K = 3 picks.
    assert t == 3 and (multi.size, multi.picks, multi.bits) == (27, 1, 5)
    assert single.picks == 0


def test_plan_for_100_clusters_has_a_single_pick_left_over():
    multi, single, t = plan_phases(100)
    assert t == 1 and multi.picks == 100 and single.picks == 0
    multi, single, t = plan_phases(7)
    # 7^4 = 2401 <= 4096: 1 pick of 4-tuples, 3 single picks.
    assert t == 4 and multi.picks == 1 and single.picks == 3


def test_tuple_table_digits_index_the_summands():
    table = tuple_table(np.array([1.0, 10.0, 100.0]), 2, 4)
    # index i*3 + j holds v_i + v_j, padded with zeros to 2**4 entries
    assert table[:9].tolist() == [2, 11, 101, 11, 20, 110, 101, 110, 200]
    assert table[9:].tolist() == [0.0] * 7


@pytest.mark.parametrize("num_clusters", [1, 2, 3, 7, 8, 16, 64, 100])
def test_numba_and_numpy_decoders_agree(num_clusters):
    values = np.random.default_rng(num_clusters).normal(size=num_clusters)
    fast = resample_totals(values, 3000, np.random.default_rng(5))
    slow = resample_totals(values, 3000, np.random.default_rng(5), use_numba=False)
    assert np.allclose(fast, slow, rtol=0, atol=1e-12)


def test_complex_values_resample_two_sums_together():
    values = np.array([1.0 + 1j, 10.0 + 4j, 3.0 + 2j])
    fast = resample_totals(values, 2000, np.random.default_rng(1))
    slow = resample_totals(values, 2000, np.random.default_rng(1), use_numba=False)
    assert np.allclose(fast, slow, atol=1e-12)
    # Each total is the sum of 3 picks: the imaginary part (counts) lies in [3, 12].
    assert fast.imag.min() >= 3 and fast.imag.max() <= 12


def test_totals_have_the_multinomial_moments():
    # Sum of K iid picks from values: mean K·mean(v), variance K·var(v) (population variance).
    values = np.array([0.0, 1.0, 5.0, 2.0, 2.0])
    totals = resample_totals(values, 200_000, np.random.default_rng(9))
    assert totals.mean() == pytest.approx(5 * values.mean(), abs=0.02)
    assert totals.var() == pytest.approx(5 * values.var(), rel=0.02)


def test_rows_that_run_short_are_redrawn(monkeypatch):
    # Reserve far fewer fields than needed so rows run short and take the fallback path.
    monkeypatch.setattr(resample, "SPARE_SIGMAS", -6.0)
    values = np.array([0.0, 1.0, 2.0])
    totals = resample_totals(values, 500, np.random.default_rng(2))
    again = resample_totals(values, 500, np.random.default_rng(2), use_numba=False)
    assert np.allclose(totals, again)
    assert set(np.round(totals, 9)) <= set(range(7))  # a sum of three picks from {0, 1, 2}


def test_numba_backend_is_installed():
    assert backend() == "numba"
