"""BatchNorm of ``(N, C)`` data (the ``(N, C, 1)`` views of BatchNorm after FullyConnected): the
row-wise kernels of :mod:`symjit.kernels.cpu.norm_rows`, which ``norm``'s kernels take for
``S == 1``, give the bits of the per-channel loops they replace (the same float64 sums in the same
order), match numpy, and keep their three in-place forms."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu import norm

RNG = np.random.default_rng(21)
SHAPES = [(100, 128, 1), (7, 3, 1), (1, 5, 1), (33, 1000, 1)]


def _vectors(c: int, dtype):
    gamma, beta = RNG.uniform(0.5, 2, c).astype(dtype), RNG.standard_normal(c).astype(dtype)
    return gamma, beta, RNG.standard_normal(c).astype(dtype), RNG.uniform(0.5, 2, c).astype(dtype)


def _channel_loop(fn, c: int, *args) -> None:
    """The per-channel kernels' own loop (the oracle the row-wise kernels must equal)."""
    for ch in range(c):
        fn(*args, ch)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_forward_gives_the_per_channel_bits(shape, dtype, fix_gamma):
    c = shape[1]
    x = (RNG.standard_normal(shape) * 3 + 5).astype(dtype)
    gamma, beta, mm, mv = _vectors(c, dtype)
    got, want = [], []
    for results, train in ((got, norm.batchnorm_forward_train), (want, norm._train_channel)):
        m, v = mm.copy(), mv.copy()
        out, sm, si = np.full_like(x, np.nan), np.empty(c, dtype), np.empty(c, dtype)
        args = (x, gamma, beta, m, v, out, sm, si, 1e-3, 0.9, fix_gamma, True)
        train(*args) if train is norm.batchnorm_forward_train else _channel_loop(train, c, *args)
        results.extend([out, sm, si, m, v])
    for results, inference in ((got, norm.batchnorm_forward_inference), (want, norm._inference_channel)):
        out, sm, si = np.full_like(x, np.nan), np.empty(c, dtype), np.empty(c, dtype)
        args = (x, gamma, beta, mm, mv, out, sm, si, 1e-3, fix_gamma)
        if inference is norm.batchnorm_forward_inference:
            inference(*args)
        else:
            _channel_loop(inference, c, *args)
        results.extend([out, sm, si])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    x64 = x[:, :, 0].astype(np.float64)
    g = 1.0 if fix_gamma else gamma.astype(np.float64)
    ref = (x64 - x64.mean(0)) / np.sqrt(x64.var(0) + 1e-3) * g + beta
    np.testing.assert_allclose(got[0][:, :, 0], ref, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("use_batch_stats", [True, False])
def test_backward_gives_the_per_channel_bits_in_each_in_place_form(shape, dtype, relu, use_batch_stats):
    c = shape[1]
    x = (RNG.standard_normal(shape) * 3 + 5).astype(dtype)
    dout = RNG.standard_normal(shape).astype(dtype)
    gamma, beta, _, _ = _vectors(c, dtype)
    mean = x.mean((0, 2)).astype(dtype)
    inv = (1 / np.sqrt(x.var((0, 2)) + 1e-3)).astype(dtype)
    head = (gamma, beta) if relu else (gamma,)
    kernel = norm.batchnorm_relu_backward if relu else norm.batchnorm_backward
    channel = norm._relu_backward_channel if relu else norm._backward_channel
    for fix_gamma in (False, True):
        for alias in (0, 1, 2):            # dx a buffer of its own, dout's, x's
            results = []
            for whole in (True, False):
                xx, dd = x.copy(), dout.copy()
                dx = (np.full_like(x, np.nan), dd, xx)[alias]
                dg, db = np.empty(c, dtype), np.empty(c, dtype)
                args = (xx, dd, *head, mean, inv, dx, dg, db, fix_gamma, use_batch_stats)
                kernel(*args) if whole else _channel_loop(channel, c, *args, alias)
                results.append((dx.copy(), dg, db))
            for a, b in zip(*results):
                np.testing.assert_array_equal(a, b)
    if not relu and use_batch_stats:
        dx, dg, db = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
        kernel(x, dout, gamma, mean, inv, dx, dg, db, False, True)
        d64, x64 = dout[:, :, 0].astype(np.float64), x[:, :, 0].astype(np.float64)
        xhat = (x64 - mean) * inv.astype(np.float64)
        want = gamma * inv * (d64 - d64.mean(0) - xhat * (d64 * xhat).mean(0))
        np.testing.assert_allclose(dx[:, :, 0], want, rtol=2e-3 if dtype == np.float32 else 1e-9,
                                   atol=2e-4 if dtype == np.float32 else 1e-10)


def test_an_inf_in_x_stays_out_of_the_global_statistics_gradient():
    """With the moving statistics (``use_batch_stats=False``) dx = dout * gamma * invstd: x is not
    read, so an inf there stays out of dx."""
    x = RNG.standard_normal((4, 6, 1)).astype(np.float32)
    x[2, 3, 0] = np.inf
    dout = RNG.standard_normal(x.shape).astype(np.float32)
    gamma = RNG.uniform(0.5, 2, 6).astype(np.float32)
    inv = RNG.uniform(0.5, 2, 6).astype(np.float32)
    dx, dg, db = np.empty_like(x), np.empty(6, np.float32), np.empty(6, np.float32)
    norm.batchnorm_backward(x, dout, gamma, np.zeros(6, np.float32), inv, dx, dg, db, False, False)
    np.testing.assert_allclose(dx[:, :, 0], dout[:, :, 0] * (gamma * inv), rtol=1e-6)
