"""The one resampler of the paper's App. C.2 (:mod:`chorustic.resampling`): the same function, the same
numbers and the same precision for the data preprocessing, the methods' input helpers, the prior and the
model; and how it compares with the library calls it could have been."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from chorustic.resampling import linear_weights, resample_linear

LENGTHS = [1, 2, 3, 7, 15, 24, 29, 100, 150, 255, 256, 511, 512, 513, 1000, 1751, 2844]


def _torch(x: np.ndarray, length: int) -> np.ndarray:
    t = torch.from_numpy(x)
    return F.interpolate(t, size=length, mode="linear", align_corners=False).numpy()


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("out", [512, 64, 1])
def test_resample_matches_torch_float64(n, out):
    rng = np.random.default_rng(n * 1000 + out)
    x = rng.normal(size=(3, 2, n)) * rng.uniform(0.01, 100)
    ours = resample_linear(x, out)
    assert ours.shape == (3, 2, out) and ours.dtype == np.float64
    np.testing.assert_allclose(ours, _torch(x, out), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", LENGTHS)
def test_resample_matches_torch_float32(n):
    x = np.random.default_rng(n).normal(size=(4, 3, n)).astype(np.float32) * 50
    ours = resample_linear(x, 512)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, _torch(x, 512), rtol=1e-5, atol=1e-5)


def test_resample_known_values_and_edges():
    # 2 -> 4 with align_corners=False: sample points -0.25(clamped 0), 0.25, 0.75, 1.25(-> last)
    np.testing.assert_allclose(resample_linear(np.array([0.0, 1.0]), 4), [0.0, 0.25, 0.75, 1.0])
    np.testing.assert_array_equal(resample_linear(np.array([5.0]), 3), [5.0, 5.0, 5.0])  # constant
    x = np.arange(10.0)
    np.testing.assert_array_equal(resample_linear(x, 10), x)  # identity, a copy
    assert resample_linear(x, 10) is not x
    i0, i1, w1 = linear_weights(4, 2)  # downsampling 4 -> 2 samples at 0.5 and 2.5
    np.testing.assert_array_equal(i0, [0, 2]) and np.testing.assert_allclose(w1, [0.5, 0.5])
    with pytest.raises(ValueError, match="empty"):
        resample_linear(np.zeros((1, 0)), 512)



def test_every_component_resamples_with_the_one_function():
    import chorustic.data.preprocessing as data
    import chorustic.methods.inputs as inputs
    import chorustic.model.patch_tokenizer as model
    import chorustic.prior.episode as prior

    assert data.resample_linear is resample_linear
    assert inputs.resample_linear is resample_linear
    assert prior.resample_linear is resample_linear
    assert model.resample_length is resample_linear


def test_tensors_and_arrays_give_the_same_numbers_in_float64():
    rng = np.random.default_rng(3)
    for n, out in [(37, 512), (1751, 512), (9, 1000), (600, 64)]:
        x64 = rng.normal(size=(2, 3, n)) * 30
        t64 = resample_linear(torch.from_numpy(x64), out)
        assert t64.dtype == torch.float64 and np.array_equal(t64.numpy(), resample_linear(x64, out))
        x32 = x64.astype(np.float32)
        t32 = resample_linear(torch.from_numpy(x32), out)
        a32 = resample_linear(x32, out)
        assert t32.dtype == torch.float32 and a32.dtype == np.float32
        assert np.array_equal(t32.numpy(), a32)
        # float32 input: float64 arithmetic, rounded once (the same precision everywhere)
        assert np.array_equal(a32, resample_linear(x32.astype(np.float64), out).astype(np.float32))
    x = torch.zeros(2, 512)
    assert resample_linear(x, 512) is x  # the model's no-op when the length already matches


def test_large_inputs_resample_in_blocks_to_the_same_numbers(monkeypatch):
    """The float64 arithmetic runs on blocks of rows (a model of length 128 given a whole episode of 512-point
    series held ~13 bytes per input value more); the blocks give the numbers of one pass, and ``out`` writes
    into rows of a larger array without another copy."""
    import chorustic.resampling as resampling

    rng = np.random.default_rng(5)
    x = (rng.normal(size=(4, 7, 3, 100)) * 30).astype(np.float32)
    i0, i1, w1 = linear_weights(100, 37)
    xf = x.astype(np.float64)
    one_pass = (xf[..., i0] * (1.0 - w1) + xf[..., i1] * w1).astype(np.float32)
    monkeypatch.setattr(resampling, "BLOCK_VALUES", 250)  # 2 rows of 100 points at a time: 42 blocks
    assert np.array_equal(resample_linear(x, 37), one_pass)
    t = resample_linear(torch.from_numpy(x), 37)
    assert t.dtype == torch.float32 and np.array_equal(t.numpy(), one_pass)
    episode = np.full((9, 3, 37), np.nan, dtype=np.float32)
    got = resample_linear(x[0], 37, out=episode[2:])
    assert got.base is episode and np.array_equal(episode[2:], one_pass[0]) and np.isnan(episode[:2]).all()
    resample_linear(x[1, :2, :, :37], 37, out=episode[:2])  # the length already matches: copied in
    assert np.array_equal(episode[:2], x[1, :2, :, :37])
    with pytest.raises(ValueError, match="C-contiguous"):
        resample_linear(x[0], 37, out=np.empty((7, 3, 74), dtype=np.float32)[..., ::2])
    with pytest.raises(TypeError, match="numpy input only"):
        resample_linear(torch.from_numpy(x), 37, out=episode)


def test_methods_resample_variable_length_series_with_it():
    from chorustic.methods.inputs import to_fixed_length

    x = np.random.default_rng(0).normal(size=(3, 2, 37)).astype(np.float32)
    ragged = [x[0][:, :10], x[1][:, :20]]
    out = to_fixed_length(ragged)
    assert out.shape == (2, 2, 20) and out.dtype == np.float32
    assert np.array_equal(out[1], x[1][:, :20])
    assert np.array_equal(out[0], resample_linear(x[0][:, :10], 20))
    assert np.array_equal(to_fixed_length(x, 512), resample_linear(x, 512))


def test_the_linspace_grid_of_unishape_is_aeons_resizer():
    """UniShape's authors resample on linspace(0, 1) grids (align_corners=True): a different resampler,
    aeon's Resizer, checked against scipy's interp1d on the same grids."""
    from scipy.interpolate import interp1d

    from chorustic.methods.inputs import to_fixed_length

    x = np.random.default_rng(0).normal(size=(3, 2, 37)).astype(np.float32)
    for n in (8, 512):
        ref = interp1d(np.linspace(0, 1, 37), x.astype(np.float64), kind="linear", axis=-1)(np.linspace(0, 1, n))
        got = to_fixed_length(x, n, method="linspace")
        assert got.dtype == np.float32 and np.allclose(got, ref, atol=1e-6)
    ragged = [x[0][:, :10], x[1][:, :20]]
    got = to_fixed_length(ragged, 16, method="linspace")
    ref = interp1d(np.linspace(0, 1, 10), x[0][:, :10].astype(np.float64), axis=-1)(np.linspace(0, 1, 16))
    assert got.shape == (2, 2, 16) and np.allclose(got[0], ref, atol=1e-6)
