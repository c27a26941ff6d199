"""The Gaussian-process kernel-bank prior of the signal encoder's pretraining (chorustic/prior/kernel_bank.py)."""

from __future__ import annotations

import numpy as np
import pytest

from chorustic.prior.kernel_bank import KERNELS, Kernel, KernelBankConfig, sample_batch, sample_kernel, sample_series


def test_a_series_is_reproducible_alone_and_the_stream_sliced_anywhere():
    x, k = sample_series(3, 17)
    y, k2 = sample_series(3, 17)
    assert np.array_equal(x, y) and k == k2
    assert not np.array_equal(x, sample_series(3, 18)[0]) and not np.array_equal(x, sample_series(4, 17)[0])
    batch = sample_batch(3, 10, 12)
    assert batch.shape == (12, 512) and batch.dtype == np.float32
    assert np.array_equal(batch[7], x)  # series 17 of the stream, whichever slice draws it
    assert sample_batch(3, 0, 0).shape == (0, 512)


def test_every_series_is_finite_and_standardised_and_the_bank_is_used_in_compositions():
    cfg = KernelBankConfig(length=128)
    seen, ops, sizes = set(), set(), []
    for i in range(300):
        x, kernel = sample_series(0, i, cfg)
        assert x.shape == (128,) and np.isfinite(x).all()
        assert abs(float(x.mean())) < 1e-4 and (abs(float(x.std()) - 1) < 1e-3 or not x.any())
        seen |= {name for name in KERNELS if name + "(" in kernel}
        ops |= {op for op in (" + ", " * ") if op in kernel}
        sizes.append(sum(kernel.count(name + "(") for name in KERNELS))
    assert seen == set(KERNELS) and ops == {" + ", " * "}
    assert min(sizes) == 1 and max(sizes) == cfg.max_kernels


def test_rbf_draws_are_smooth_nearby_points_correlate_more_than_distant_ones():
    """A single RBF kernel, its length scale drawn per series: over 4,000 draws the correlation of two points
    falls with their distance, as the kernel's does."""
    cfg = KernelBankConfig(length=32, max_kernels=1, weights=(("RBF", 1.0),))
    draws = sample_batch(1, 0, 4000, cfg).astype(np.float64)
    lengths = {sample_series(1, i, cfg)[1] for i in range(5)}
    assert len(lengths) == 5  # each series its own length scale
    k = Kernel("RBF", (0.2,))
    t = np.linspace(0, 1, 32)
    c = k.matrix(t, 32)
    assert np.allclose(np.diag(c), 1) and c[0, 1] > c[0, 10] > c[0, 31] > 0
    # across draws of different length scales, nearby points stay more correlated than distant ones
    corr = np.corrcoef(draws.T)
    assert corr[0, 1] > corr[0, 8] > corr[0, 31] and corr[0, 1] > 0.8


def test_a_periodic_kernel_repeats_at_its_period():
    cfg = KernelBankConfig(length=240, max_kernels=1, weights=(("Periodic", 1.0),), periods=(24,))
    for i in range(40):
        x, kernel = sample_series(2, i, cfg)
        if kernel.startswith("Periodic(24,"):
            assert np.corrcoef(x[:-24], x[24:])[0, 1] > 0.99, kernel  # one period later: the same values
            break
    else:
        pytest.fail("no series with the calendar period 24 in 40 draws")
    assert Kernel("Periodic", (24.0, 1.0)).matrix(np.linspace(0, 1, 240), 240)[0, 24] == pytest.approx(1.0)


def test_a_linear_kernel_gives_a_trend_and_sums_and_products_combine_matrices():
    t = np.linspace(0, 1, 16)
    lin, rbf = Kernel("Linear", (0.0, 1.0)), Kernel("RBF", (0.3,))
    assert np.allclose(Kernel("+", (), (lin, rbf)).matrix(t, 16), lin.matrix(t, 16) + rbf.matrix(t, 16))
    assert np.allclose(Kernel("*", (), (lin, rbf)).matrix(t, 16), lin.matrix(t, 16) * rbf.matrix(t, 16))
    assert str(Kernel("*", (), (lin, rbf))) == "(Linear(0, 1) * RBF(0.3))"
    cfg = KernelBankConfig(length=64, max_kernels=1, weights=(("Linear", 1.0),))
    x, _ = sample_series(0, 0, cfg)
    assert abs(np.corrcoef(x, np.arange(64))[0, 1]) > 0.999  # a straight line, up or down


def test_a_bad_configuration_is_one_clear_error():
    with pytest.raises(ValueError, match=r"unknown kernels \['Matern'\]"):
        KernelBankConfig(weights=(("Matern", 1.0),))
    with pytest.raises(ValueError, match="max_kernels must be >= 1"):
        KernelBankConfig(max_kernels=0)
    rng = np.random.default_rng(0)
    assert isinstance(sample_kernel(rng), Kernel)


def test_a_stationary_kernel_spread_over_its_lags_is_the_kernel_on_every_pair():
    from chorustic.prior.kernel_bank import STATIONARY

    t = np.linspace(0, 1, 50)
    d = np.abs(t[:, None] - t[None, :])
    for k in (Kernel("RBF", (0.1,)), Kernel("Periodic", (7.0, 1.0)), Kernel("RationalQuadratic", (0.1, 2.0))):
        assert k.name in STATIONARY
        assert np.allclose(k.matrix(t, 50), KERNELS[k.name][1](d, 50, *k.params)), k
