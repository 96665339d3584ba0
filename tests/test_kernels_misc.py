"""Tests of the softmax/loss, norm, reduce, embedding and dropout CPU kernels.

References are numpy written here; backward kernels are also checked against central finite
differences in float64 (SoftmaxOutput against its documented gradient formula instead).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from symjit.kernels.cpu import embed, norm, random, reduce, softmax

from .partsrun import in_parts

DTYPES = [np.float32, np.float64]
SEEDS = [0, 1, 2]


def tol(dtype):
    return {"rtol": 2e-5, "atol": 2e-6} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-12}


def num_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar function ``f`` at ``x`` (modified in place, restored)."""
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f()
        flat[i] = old - eps
        lo = f()
        flat[i] = old
        gf[i] = (hi - lo) / (2 * eps)
    return g


def rand_shape(rng, ndim, lo=1, hi=6):
    return tuple(int(v) for v in rng.integers(lo, hi, size=ndim))


# ---------------------------------------------------------------------------------------------
# numpy references


def np_softmax(x, axis=-1, t=1.0):
    z = x.astype(np.float64) / t
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1, t=1.0):
    z = x.astype(np.float64) / t
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("t", [1.0, 0.5, 3.0])
def test_softmax_forward_2d_3d(dtype, seed, t):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(rand_shape(rng, 2)) * 5).astype(dtype)
    out = np.empty_like(x)
    softmax.check_softmax("softmax_forward", x, out, t)
    softmax.softmax_forward(x, out, t)
    np.testing.assert_allclose(out, np_softmax(x, -1, t), **tol(dtype))
    softmax.log_softmax_forward(x, out, t)
    np.testing.assert_allclose(out, np_log_softmax(x, -1, t), **tol(dtype))
    x3 = (rng.standard_normal(rand_shape(rng, 3)) * 5).astype(dtype)
    out3 = np.empty_like(x3)
    softmax.softmax_forward_3d(x3, out3, t)
    np.testing.assert_allclose(out3, np_softmax(x3, 1, t), **tol(dtype))
    softmax.log_softmax_forward_3d(x3, out3, t)
    np.testing.assert_allclose(out3, np_log_softmax(x3, 1, t), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_is_stable_for_large_inputs(dtype):
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], dtype=dtype)
    out = np.empty_like(x)
    softmax.softmax_forward(x, out)
    e = np.exp([-1.0, 0.0, -2.0])
    np.testing.assert_allclose(out[0], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(out[1], [1 / 3] * 3, rtol=1e-6)
    softmax.log_softmax_forward(x, out)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_softmax_backward_matches_formula(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(rand_shape(rng, 2)).astype(dtype)
    dout = rng.standard_normal(x.shape).astype(dtype)
    t = 0.7
    y, dx = np.empty_like(x), np.empty_like(x)
    softmax.softmax_forward(x, y, t)
    softmax.check_softmax_backward("softmax_backward", dout, y, dx, t)
    softmax.softmax_backward(dout, y, dx, t)
    y64 = y.astype(np.float64)
    want = y64 * (dout - (dout * y64).sum(-1, keepdims=True)) / t
    np.testing.assert_allclose(dx, want, **tol(dtype))
    softmax.log_softmax_forward(x, y, t)
    softmax.log_softmax_backward(dout, y, dx, t)
    want = (dout - np.exp(y.astype(np.float64)) * dout.sum(-1, keepdims=True)) / t
    np.testing.assert_allclose(dx, want, **tol(dtype))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("three_d", [False, True])
def test_softmax_backward_finite_differences(log, three_d):
    rng = np.random.default_rng(5)
    shape = (2, 4, 3) if three_d else (3, 4)
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape)
    t = 1.5
    if three_d:
        fwd = softmax.log_softmax_forward_3d if log else softmax.softmax_forward_3d
        bwd = softmax.log_softmax_backward_3d if log else softmax.softmax_backward_3d
    else:
        fwd = softmax.log_softmax_forward if log else softmax.softmax_forward
        bwd = softmax.log_softmax_backward if log else softmax.softmax_backward
    y = np.empty_like(x)

    def loss():
        fwd(x, y, t)
        return float((w * y).sum())

    want = num_grad(loss, x)
    fwd(x, y, t)
    dx = np.empty_like(x)
    bwd(w, y, dx, t)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-8)


def test_check_softmax_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"'out' has shape \(3,2\), expected \(2,3\)"):
        softmax.check_softmax("softmax_forward", x, np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="dtype float64 but 'x' has float32"):
        softmax.check_softmax("softmax_forward", x, np.zeros((2, 3), np.float64))
    with pytest.raises(ValueError, match="temperature"):
        softmax.check_softmax("softmax_forward", x, x.copy(), 0.0)
    with pytest.raises(ValueError, match=r"2-D \(M, K\) or 3-D.*shape \(6,\)"):
        softmax.check_softmax("softmax_forward", x.ravel(), x.ravel())
    with pytest.raises(ValueError, match="'dx' has shape"):
        softmax.check_softmax_backward("softmax_backward", x, x, np.zeros((2, 4), np.float32))


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput


def np_softmax_output_grad(prob, label, grad_scale, ignore_label, use_ignore, norm, alpha, multi):
    """The documented SoftmaxOutput gradient, written out loop by loop."""
    if not multi:
        prob, label = prob[:, :, None], label[:, None]
    n, k, s = prob.shape
    dx = np.zeros(prob.shape)
    for i in range(n):
        for j in range(s):
            c = int(label[i, j])
            if use_ignore and c == int(ignore_label):
                continue
            for q in range(k):
                if q == c:
                    target = 1.0 - alpha
                else:
                    target = alpha / (k - 1) if k > 1 else 0.0
                dx[i, q, j] = prob[i, q, j] - target
    valid = max(int(sum(int(v) != int(ignore_label) for v in label.ravel())), 1)
    if norm == "valid":
        dx *= grad_scale / valid
    elif norm == "batch":
        dx *= grad_scale / n / (s if multi else 1)
    else:
        dx *= grad_scale / (s if multi else 1)
    return dx if multi else dx[:, :, 0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("norm_name", ["null", "batch", "valid"])
@pytest.mark.parametrize("use_ignore,alpha", [(False, 0.0), (True, 0.0), (True, 0.1), (False, 0.2)])
def test_softmax_output_backward(dtype, multi, norm_name, use_ignore, alpha):
    rng = np.random.default_rng(hash((multi, norm_name, use_ignore, alpha)) % 2**32)
    n, k, s = 4, 5, 3
    x = rng.standard_normal((n, k, s) if multi else (n, k)).astype(dtype)
    label = rng.integers(0, k, size=(n, s) if multi else (n,)).astype(dtype)
    ignore = 2.0
    if use_ignore:
        label.reshape(-1)[:3] = ignore
    prob, dx = np.empty_like(x), np.empty_like(x)
    code = softmax.NORMALIZATION_CODES[norm_name]
    if multi:
        softmax.softmax_output_forward_3d(x, prob)
        np.testing.assert_allclose(prob, np_softmax(x, 1), **tol(dtype))
        softmax.check_softmax_output("softmax_output_backward_3d", prob, label, dx, ignore, use_ignore, alpha)
        softmax.softmax_output_backward_3d(prob, label, dx, 2.0, ignore, use_ignore, code, alpha)
    else:
        softmax.softmax_output_forward(x, prob)
        np.testing.assert_allclose(prob, np_softmax(x, -1), **tol(dtype))
        softmax.check_softmax_output("softmax_output_backward", prob, label, dx, ignore, use_ignore, alpha)
        softmax.softmax_output_backward(prob, label, dx, 2.0, ignore, use_ignore, code, alpha)
    want = np_softmax_output_grad(prob.astype(np.float64), label, 2.0, ignore, use_ignore, norm_name,
                                  alpha, multi)
    np.testing.assert_allclose(dx, want, **tol(dtype))


def test_softmax_output_hand_computed():
    prob = np.array([[0.25, 0.75], [0.5, 0.5]])
    label = np.array([1.0, -1.0])
    dx = np.empty_like(prob)
    # ignore the second row, normalise by the one valid label, grad_scale 1
    softmax.softmax_output_backward(prob, label, dx, 1.0, -1.0, True, softmax.NORM_VALID, 0.0)
    np.testing.assert_allclose(dx, [[0.25, -0.25], [0.0, 0.0]])
    # float labels truncate toward zero (1.7 -> class 1), batch normalisation divides by 2
    label = np.array([1.7, 0.2])
    softmax.softmax_output_backward(prob, label, dx, 1.0, -1.0, False, softmax.NORM_BATCH, 0.0)
    np.testing.assert_allclose(dx, [[0.125, -0.125], [-0.25, 0.25]])


def test_softmax_output_backward_prob_label():
    rng = np.random.default_rng(3)
    prob, lab = rng.random((3, 4)), rng.random((3, 4))
    dx = np.empty_like(prob)
    softmax.softmax_output_backward_prob(prob, lab, dx, 0.5)
    np.testing.assert_allclose(dx, (prob - lab) * 0.5)


def test_check_softmax_output_errors():
    prob = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"'label'.*outside \[0, 3\).*shape \(2,3\)"):
        softmax.check_softmax_output("softmax_output_backward", prob, np.array([0.0, 3.0]), prob.copy())
    with pytest.raises(ValueError, match=r"outside \[0, 3\)"):  # -1 is only fine when ignored
        softmax.check_softmax_output("softmax_output_backward", prob, np.array([0.0, -1.0]), prob.copy())
    softmax.check_softmax_output("softmax_output_backward", prob, np.array([0.0, -1.0]), prob.copy(),
                                 ignore_label=-1, use_ignore=True)
    with pytest.raises(ValueError, match=r"outside"):
        softmax.check_softmax_output("softmax_output_backward", prob, np.array([0.0, np.nan]), prob.copy())
    with pytest.raises(ValueError, match=r"'label' has shape \(3,\), expected \(2,\)"):
        softmax.check_softmax_output("softmax_output_backward", prob, np.zeros(3), prob.copy())
    p3 = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match=r"expected \(2,4\) for prob of shape \(2,3,4\)"):
        softmax.check_softmax_output("softmax_output_backward_3d", p3, np.zeros((2, 3)), p3.copy())
    with pytest.raises(ValueError, match="smooth_alpha"):
        softmax.check_softmax_output("softmax_output_backward", prob, np.zeros(2), prob.copy(),
                                     smooth_alpha=2)


# ---------------------------------------------------------------------------------------------
# regression outputs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(softmax.REGRESSION_CODES))
def test_regression_outputs(dtype, name):
    rng = np.random.default_rng(11)
    kind = softmax.REGRESSION_CODES[name]
    x = rng.standard_normal((5, 3)).astype(dtype)
    label = rng.random((5, 3)).astype(dtype)
    out, dx = np.empty_like(x), np.empty_like(x)
    softmax.check_regression(name, out, label, dx)
    softmax.regression_forward(x, out, kind)
    x64 = x.astype(np.float64)
    want_out = 1 / (1 + np.exp(-x64)) if name.startswith("Logistic") else x64
    np.testing.assert_allclose(out, want_out, **tol(dtype))
    softmax.regression_backward(out, label, dx, 2.0, kind)
    diff = out.astype(np.float64) - label
    want = 2.0 / 3 * (np.sign(diff) if name.startswith("MAE") else diff)
    np.testing.assert_allclose(dx, want, **tol(dtype))


@pytest.mark.parametrize("kind", [softmax.REG_LINEAR, softmax.REG_MAE])
def test_regression_backward_finite_differences(kind):
    # linear: the gradient of 0.5 * sum((x - y)^2) / M; MAE: of sum(|x - y|) / M
    rng = np.random.default_rng(2)
    x, label = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    m = x.shape[1]

    def loss():
        d = x - label
        return float((0.5 * d * d).sum() / m if kind == softmax.REG_LINEAR else np.abs(d).sum() / m)

    want = num_grad(loss, x)
    dx = np.empty_like(x)
    softmax.regression_backward(x, label, dx, 1.0, kind)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-8)


def test_check_regression_errors():
    with pytest.raises(ValueError, match=r"'label' has shape \(2,3\), expected \(3,2\)"):
        softmax.check_regression("LinearRegressionOutput", np.zeros((3, 2)), np.zeros((2, 3)))


# ---------------------------------------------------------------------------------------------
# BatchNorm


def np_bn_train(x, gamma, beta, eps, fix_gamma):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2))
    var = x64.var(axis=(0, 2))
    g = np.ones_like(mean) if fix_gamma else gamma
    xhat = (x64 - mean[None, :, None]) / np.sqrt(var[None, :, None] + eps)
    return xhat * g[None, :, None] + beta[None, :, None], mean, var


def bn_arrays(rng, dtype, shape):
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    c = shape[1]
    gamma = rng.uniform(0.5, 2, c).astype(dtype)
    beta = rng.standard_normal(c).astype(dtype)
    return x, gamma, beta


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batchnorm_train_forward_and_moving_stats(dtype, seed, fix_gamma):
    rng = np.random.default_rng(seed)
    shape = rand_shape(rng, 3, 1, 5)
    shape = (shape[0] + 1, shape[1], shape[2])
    c = shape[1]
    mm, mv = np.zeros(c, dtype), np.ones(c, dtype)
    want_mm, want_mv = mm.astype(np.float64), mv.astype(np.float64)
    eps, momentum = 1e-3, 0.9
    for _step in range(3):
        x, gamma, beta = bn_arrays(rng, dtype, shape)
        out, mean, invstd = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
        norm.check_batchnorm("batchnorm_forward_train", x, gamma, beta, mm, mv, out, mean, invstd)
        norm.batchnorm_forward_train(x, gamma, beta, mm, mv, out, mean, invstd, eps, momentum, fix_gamma,
                                     True)
        want, bmean, bvar = np_bn_train(x, gamma, beta, eps, fix_gamma)
        np.testing.assert_allclose(out, want, **tol(dtype))
        np.testing.assert_allclose(mean, bmean, **tol(dtype))
        np.testing.assert_allclose(invstd, 1 / np.sqrt(bvar + eps), **tol(dtype))
        want_mm = want_mm * momentum + bmean * (1 - momentum)   # biased batch variance, as MXNet
        want_mv = want_mv * momentum + bvar * (1 - momentum)
        np.testing.assert_allclose(mm, want_mm, **tol(dtype))
        np.testing.assert_allclose(mv, want_mv, **tol(dtype))


def test_batchnorm_moving_update_hand_computed_and_disabled():
    x = np.array([[[1.0, 3.0]], [[5.0, 7.0]]])  # mean 4, biased var 5
    mm, mv = np.array([1.0]), np.array([2.0])
    out, mean, inv = np.empty_like(x), np.empty(1), np.empty(1)
    norm.batchnorm_forward_train(x, np.ones(1), np.zeros(1), mm, mv, out, mean, inv, 0.0, 0.5, False, False)
    assert mm[0] == 1.0 and mv[0] == 2.0
    norm.batchnorm_forward_train(x, np.ones(1), np.zeros(1), mm, mv, out, mean, inv, 0.0, 0.5, False, True)
    np.testing.assert_allclose([mm[0], mv[0]], [2.5, 3.5])
    norm.batchnorm_update_moving(mm, mv, np.array([4.5]), np.array([5.5]), 0.5)
    np.testing.assert_allclose([mm[0], mv[0]], [3.5, 4.5])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batchnorm_inference(dtype, fix_gamma):
    rng = np.random.default_rng(4)
    x, gamma, beta = bn_arrays(rng, dtype, (3, 4, 5))
    mm = rng.standard_normal(4).astype(dtype)
    mv = rng.uniform(0.5, 2, 4).astype(dtype)
    out, mean, inv = np.empty_like(x), np.empty(4, dtype), np.empty(4, dtype)
    norm.check_batchnorm("batchnorm_forward_inference", x, gamma, beta, mm, mv, out, mean, inv,
                         training=False)
    norm.batchnorm_forward_inference(x, gamma, beta, mm, mv, out, mean, inv, 1e-3, fix_gamma)
    g = np.ones(4) if fix_gamma else gamma.astype(np.float64)
    want = (x - mm[None, :, None].astype(np.float64)) / np.sqrt(mv[None, :, None] + 1e-3) * g[None, :, None]
    np.testing.assert_allclose(out, want + beta[None, :, None], **tol(dtype))
    np.testing.assert_allclose(mean, mm)
    np.testing.assert_allclose(inv, 1 / np.sqrt(mv.astype(np.float64) + 1e-3), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batchnorm_backward_matches_formula(dtype, fix_gamma):
    rng = np.random.default_rng(8)
    x, gamma, beta = bn_arrays(rng, dtype, (4, 3, 6))
    dout = rng.standard_normal(x.shape).astype(dtype)
    c, eps = 3, 1e-3
    mm, mv = np.zeros(c, dtype), np.ones(c, dtype)
    out, mean, inv = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
    norm.batchnorm_forward_train(x, gamma, beta, mm, mv, out, mean, inv, eps, 0.9, fix_gamma, False)
    dx, dg, db = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
    norm.check_batchnorm_backward("batchnorm_backward", x, dout, gamma, mean, inv, dx, dg, db)
    norm.batchnorm_backward(x, dout, gamma, mean, inv, dx, dg, db, fix_gamma, True)
    x64, d64 = x.astype(np.float64), dout.astype(np.float64)
    mu = x64.mean(axis=(0, 2), keepdims=True)
    istd = 1 / np.sqrt(x64.var(axis=(0, 2), keepdims=True) + eps)
    xhat = (x64 - mu) * istd
    g = np.ones((1, c, 1)) if fix_gamma else gamma.astype(np.float64)[None, :, None]
    want = g * istd * (d64 - d64.mean(axis=(0, 2), keepdims=True)
                       - xhat * (d64 * xhat).mean(axis=(0, 2), keepdims=True))
    loose = {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else tol(dtype)
    np.testing.assert_allclose(dx, want, **loose)
    np.testing.assert_allclose(dg, np.zeros(c) if fix_gamma else (d64 * xhat).sum(axis=(0, 2)), **loose)
    np.testing.assert_allclose(db, d64.sum(axis=(0, 2)), **loose)


@pytest.mark.parametrize("use_batch_stats", [True, False])
@pytest.mark.parametrize("kernel", ["batchnorm_backward", "batchnorm_relu_backward"])
def test_batchnorm_backward_in_place_over_dout_or_x(kernel, use_batch_stats):
    """The compiler may plan dx in place over dout or x (the rules' ``inplace``): the kernels give
    the same dx, dgamma and dbeta as into a buffer of its own (they pick a row loop per case, so
    one buffer under two names does not fall back to scalar code); BatchNorm's global-statistics
    gradient never reads x (an inf in x stays out of dx)."""
    rng = np.random.default_rng(10)
    x, gamma, beta = bn_arrays(rng, np.float32, (3, 4, 37))
    dout = rng.standard_normal(x.shape).astype(np.float32)
    mean, inv = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    plain = kernel == "batchnorm_backward"
    if plain and not use_batch_stats:
        x[0, 1, 5] = np.inf
    fn = getattr(norm, kernel)
    head = (gamma, beta) if kernel == "batchnorm_relu_backward" else (gamma,)

    def run(x_, dout_, dx_):
        dg, db = np.empty(4, np.float32), np.empty(4, np.float32)
        fn(x_, dout_, *head, mean, inv, dx_, dg, db, False, use_batch_stats)
        return dx_, dg, db

    want = run(x.copy(), dout.copy(), np.full_like(x, np.nan))
    assert np.isfinite(want[0]).all()
    d = dout.copy()
    on_dout = run(x.copy(), d, d)
    xx = x.copy()
    on_x = run(xx, dout.copy(), xx)
    for got in (on_dout, on_x):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("use_batch_stats", [True, False])
def test_batchnorm_backward_finite_differences(use_batch_stats):
    rng = np.random.default_rng(9)
    x, gamma, beta = bn_arrays(rng, np.float64, (3, 2, 2))
    w = rng.standard_normal(x.shape)
    mm, mv = rng.standard_normal(2), rng.uniform(0.5, 2, 2)
    eps = 1e-3
    out, mean, inv = np.empty_like(x), np.empty(2), np.empty(2)

    def forward():
        if use_batch_stats:
            norm.batchnorm_forward_train(x, gamma, beta, mm, mv, out, mean, inv, eps, 0.9, False, False)
        else:
            norm.batchnorm_forward_inference(x, gamma, beta, mm, mv, out, mean, inv, eps, False)

    def loss():
        forward()
        return float((w * out).sum())

    want_dx, want_dg, want_db = num_grad(loss, x), num_grad(loss, gamma), num_grad(loss, beta)
    forward()
    dx, dg, db = np.empty_like(x), np.empty(2), np.empty(2)
    norm.batchnorm_backward(x, w, gamma, mean, inv, dx, dg, db, False, use_batch_stats)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dg, want_dg, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(db, want_db, rtol=1e-6, atol=1e-8)


def test_batchnorm_accurate_with_large_mean_float32():
    rng = np.random.default_rng(0)
    x = (1e4 + rng.standard_normal((64, 2, 16))).astype(np.float32)
    out, mean, inv = np.empty_like(x), np.empty(2, np.float32), np.empty(2, np.float32)
    mm, mv = np.zeros(2, np.float32), np.ones(2, np.float32)
    norm.batchnorm_forward_train(x, np.ones(2, np.float32), np.zeros(2, np.float32), mm, mv, out, mean, inv,
                                 1e-5, 0.9, True, False)
    var = x.astype(np.float64).var(axis=(0, 2))
    np.testing.assert_allclose(1 / inv.astype(np.float64) ** 2, var + 1e-5, rtol=1e-4)


def test_batchnorm_one_pass_statistics_with_an_outlier_first():
    """The statistics' one pass sums about the channel's first element: an outlier there (10^3
    standard deviations off a mean of 10^5) still gives the variance to float32 accuracy."""
    rng = np.random.default_rng(1)
    x = (1e5 + rng.standard_normal((32, 3, 40))).astype(np.float32)
    x[0, :, 0] = [1e5 + 1e3, 1e5 - 1e3, 1e5]
    out, mean, inv = np.empty_like(x), np.empty(3, np.float32), np.empty(3, np.float32)
    mm, mv = np.zeros(3, np.float32), np.ones(3, np.float32)
    in_parts(norm.batchnorm_forward_train_parts, x, np.ones(3, np.float32), np.zeros(3, np.float32), mm, mv,
             out, mean, inv, 1e-5, 0.9, True, False)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(axis=(0, 2)), rtol=1e-7)
    np.testing.assert_allclose(1 / inv.astype(np.float64) ** 2, x64.var(axis=(0, 2)) + 1e-5, rtol=1e-5)


def test_check_batchnorm_errors():
    x = np.zeros((2, 3, 4))
    v3, v2 = np.zeros(3), np.zeros(2)
    with pytest.raises(ValueError, match=r"'beta' has shape \(2,\), expected \(3,\).*x \(2,3,4\)"):
        norm.check_batchnorm("batchnorm_forward_train", x, v3, v2, v3, v3, x.copy(), v3, v3)
    with pytest.raises(ValueError, match=r"at least one value per channel.*\(0,3,4\)"):
        e = np.zeros((0, 3, 4))
        norm.check_batchnorm("batchnorm_forward_train", e, v3, v3, v3, v3, e.copy(), v3, v3)
    with pytest.raises(ValueError, match=r"'x' must have 3 dimensions, got shape \(3,4\)"):
        norm.check_batchnorm("batchnorm_forward_train", x[0], v3, v3, v3, v3, x[0].copy(), v3, v3)
    with pytest.raises(ValueError, match=r"'dgamma' has shape \(2,\)"):
        norm.check_batchnorm_backward("batchnorm_backward", x, x.copy(), v3, v3, v3, x.copy(), v2, v3)


# ---------------------------------------------------------------------------------------------
# LayerNorm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_layernorm_forward_backward(dtype, seed):
    rng = np.random.default_rng(seed)
    m, k = rand_shape(rng, 2, 1, 8)
    k += 1
    x = (rng.standard_normal((m, k)) * 2 + 1).astype(dtype)
    gamma, beta = rng.uniform(0.5, 2, k).astype(dtype), rng.standard_normal(k).astype(dtype)
    out, mean, std = np.empty_like(x), np.empty(m, dtype), np.empty(m, dtype)
    eps = 1e-5
    norm.check_layernorm("layernorm_forward", x, gamma, beta, out, mean, std)
    norm.layernorm_forward(x, gamma, beta, out, mean, std, eps)
    x64 = x.astype(np.float64)
    mu, sd = x64.mean(-1, keepdims=True), np.sqrt(x64.var(-1, keepdims=True) + eps)
    xhat = (x64 - mu) / sd
    np.testing.assert_allclose(out, xhat * gamma + beta, **tol(dtype))
    np.testing.assert_allclose(mean, mu[:, 0], **tol(dtype))
    np.testing.assert_allclose(std, sd[:, 0], **tol(dtype))
    dout = rng.standard_normal(x.shape).astype(dtype)
    dx, dg, db = np.empty_like(x), np.empty(k, dtype), np.empty(k, dtype)
    norm.check_layernorm_backward("layernorm_backward", x, dout, gamma, mean, std, dx, dg, db)
    norm.layernorm_backward(x, dout, gamma, mean, std, dx, dg, db)
    g = dout.astype(np.float64) * gamma
    want = (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True)) / sd
    loose = {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else tol(dtype)
    np.testing.assert_allclose(dx, want, **loose)
    np.testing.assert_allclose(dg, (dout * xhat).sum(0), **loose)
    np.testing.assert_allclose(db, dout.astype(np.float64).sum(0), **loose)


def test_layernorm_backward_finite_differences():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 4))
    gamma, beta, w = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal((2, 4))
    out, mean, std = np.empty_like(x), np.empty(2), np.empty(2)

    def loss():
        norm.layernorm_forward(x, gamma, beta, out, mean, std, 1e-3)
        return float((w * out).sum())

    want = [num_grad(loss, a) for a in (x, gamma, beta)]
    loss()
    dx, dg, db = np.empty_like(x), np.empty(4), np.empty(4)
    norm.layernorm_backward(x, w, gamma, mean, std, dx, dg, db)
    for got, exp in zip((dx, dg, db), want):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-7)


def test_check_layernorm_errors():
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"'save_std' has shape \(3,\), expected \(2,\) \(one per row"):
        norm.check_layernorm("layernorm_forward", x, np.zeros(3), np.zeros(3), x.copy(), np.zeros(2),
                             np.zeros(3))
    with pytest.raises(ValueError, match=r"empty axis.*\(2,0\)"):
        e = np.zeros((2, 0))
        norm.check_layernorm("layernorm_forward", e, np.zeros(0), np.zeros(0), e.copy(), np.zeros(2),
                             np.zeros(2))


# ---------------------------------------------------------------------------------------------
# reductions


REDUCERS = {
    "sum": (reduce.reduce_sum, lambda x: x.astype(np.float64).sum(1)),
    "mean": (reduce.reduce_mean, lambda x: x.astype(np.float64).mean(1)),
    "max": (reduce.reduce_max, lambda x: x.max(1)),
    "min": (reduce.reduce_min, lambda x: x.min(1)),
    "argmax": (reduce.reduce_argmax, lambda x: x.argmax(1)),
    "argmin": (reduce.reduce_argmin, lambda x: x.argmin(1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(REDUCERS))
def test_reductions(dtype, seed, name):
    rng = np.random.default_rng(seed)
    kernel, ref = REDUCERS[name]
    for shape in (rand_shape(rng, 3), (rand_shape(rng, 1)[0], 7, 1)):
        x = rng.integers(-3, 4, size=shape).astype(dtype)  # small integers: many ties
        if name in ("sum", "mean"):
            x = x + rng.standard_normal(shape).astype(dtype)
        out = np.empty((shape[0], shape[2]), dtype)
        reduce.check_reduce(kernel.__name__, x, out)
        kernel(x, out)
        np.testing.assert_allclose(out, ref(x), **tol(dtype))


def test_max_min_argmax_with_nan():
    x = np.array([[[1.0, 2.0], [np.nan, 5.0], [3.0, np.nan]]])  # (1, 3, 2)
    out = np.empty((1, 2))
    for kernel, ref in [(reduce.reduce_max, np.max), (reduce.reduce_min, np.min),
                        (reduce.reduce_argmax, np.argmax), (reduce.reduce_argmin, np.argmin)]:
        kernel(x, out)
        np.testing.assert_array_equal(out, ref(x, axis=1))


def test_sum_float32_is_accurate():
    rng = np.random.default_rng(1)
    x = rng.random((1, 100_000, 1)).astype(np.float32) + np.float32(1000)
    out = np.empty((1, 1), np.float32)
    reduce.reduce_sum(x, out)
    exact = x.astype(np.float64).sum()
    assert abs(float(out[0, 0]) - exact) <= 1e-6 * exact


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_broadcast_back(dtype, accumulate):
    rng = np.random.default_rng(7)
    a, r, b = 3, 4, 5
    x = rng.integers(0, 3, size=(a, r, b)).astype(dtype)  # ties for max/min
    dout = rng.standard_normal((a, b)).astype(dtype)
    base = rng.standard_normal((a, r, b)).astype(dtype)
    start = base if accumulate else np.zeros_like(base)
    cases = [
        (reduce.broadcast_back_sum, lambda: np.broadcast_to(dout[:, None, :], x.shape), None),
        (reduce.broadcast_back_mean, lambda: np.broadcast_to(dout[:, None, :] / r, x.shape), None),
        (reduce.broadcast_back_extreme, lambda: dout[:, None, :] * (x == x.max(1, keepdims=True)), x.max(1)),
        (reduce.broadcast_back_extreme, lambda: dout[:, None, :] * (x == x.min(1, keepdims=True)), x.min(1)),
    ]
    for kernel, ref, y in cases:
        dx = base.copy()
        if y is None:
            reduce.check_broadcast_back(kernel.__name__, dout, dx)
            kernel(dout, dx, accumulate)
        else:
            reduce.check_broadcast_back(kernel.__name__, dout, dx, x, y)
            kernel(x, y, dout, dx, accumulate)
        np.testing.assert_allclose(dx, start + ref(), **tol(dtype))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reduction_gradients_finite_differences(name):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 2))  # continuous values: no ties
    w = rng.standard_normal((2, 2))
    kernel = REDUCERS[name][0]
    y = np.empty((2, 2))

    def loss():
        kernel(x, y)
        return float((w * y).sum())

    want = num_grad(loss, x)
    kernel(x, y)
    dx = np.empty_like(x)
    if name == "sum":
        reduce.broadcast_back_sum(w, dx, False)
    elif name == "mean":
        reduce.broadcast_back_mean(w, dx, False)
    else:
        reduce.broadcast_back_extreme(x, y, w, dx, False)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_rows(dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((7, 5)).astype(dtype)
    out = rng.standard_normal(5).astype(dtype)
    start = out.copy()
    reduce.check_sum_rows("sum_rows_accumulate", x, out)
    reduce.sum_rows_accumulate(x, out)
    np.testing.assert_allclose(out, start + x.astype(np.float64).sum(0), **tol(dtype))
    reduce.sum_rows(x, out)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(0), **tol(dtype))


def test_check_reduce_errors():
    with pytest.raises(ValueError, match=r"'out' has shape \(2,4\), expected \(2,3\) for x .*\(2,5,3\)"):
        reduce.check_reduce("reduce_sum", np.zeros((2, 5, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"empty axis \(x has shape \(2,0,3\)\)"):
        reduce.check_reduce("reduce_argmax", np.zeros((2, 0, 3)), np.zeros((2, 3)))
    reduce.check_reduce("reduce_sum", np.zeros((2, 0, 3)), np.zeros((2, 3)))  # an empty sum is 0
    with pytest.raises(ValueError, match=r"'y' has shape \(3,3\), expected \(2,3\)"):
        d = np.zeros((2, 4, 3))
        reduce.check_broadcast_back("broadcast_back_extreme", np.zeros((2, 3)), d, d.copy(), np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"'out' has shape \(4,\), expected \(5,\)"):
        reduce.check_sum_rows("sum_rows", np.zeros((3, 5)), np.zeros(4))


# ---------------------------------------------------------------------------------------------
# embedding


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_embedding(dtype, seed):
    rng = np.random.default_rng(seed)
    v, d, m = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(1, 12))
    idx = rng.uniform(-3, v + 3, m).astype(dtype)
    weight = rng.standard_normal((v, d)).astype(dtype)
    out = np.empty((m, d), dtype)
    embed.check_embedding("embedding_forward", idx, weight, out)
    embed.embedding_forward(idx, weight, out)
    rows = np.clip(np.trunc(idx), 0, v - 1).astype(np.int64)  # MXNet clips out-of-range indices
    np.testing.assert_array_equal(out, weight[rows])
    dout = rng.standard_normal((m, d)).astype(dtype)
    dw = rng.standard_normal((v, d)).astype(dtype)
    start = dw.astype(np.float64)
    want = np.zeros((v, d))
    np.add.at(want, rows, dout.astype(np.float64))
    embed.embedding_backward(idx, dout, dw, True)
    np.testing.assert_allclose(dw, start + want, **tol(dtype))
    embed.embedding_backward(idx, dout, dw, False)
    np.testing.assert_allclose(dw, want, **tol(dtype))


def test_embedding_integer_and_nan_indices():
    weight = np.arange(6.0).reshape(3, 2)
    out = np.empty((4, 2))
    embed.embedding_forward(np.array([2, 0, 5, -1], np.int64), weight, out)
    np.testing.assert_array_equal(out, weight[[2, 0, 2, 0]])
    embed.embedding_forward(np.array([np.nan, np.inf, -np.inf, 1.9]), weight, out)
    np.testing.assert_array_equal(out, weight[[0, 2, 0, 1]])
    assert embed.count_out_of_range(np.array([np.nan, np.inf, -np.inf, 1.9]), 3) == 3


def test_embedding_backward_finite_differences():
    rng = np.random.default_rng(4)
    idx = np.array([0.0, 2.0, 2.0, 1.0, 9.0])
    weight, w = rng.standard_normal((3, 2)), rng.standard_normal((5, 2))
    out = np.empty((5, 2))

    def loss():
        embed.embedding_forward(idx, weight, out)
        return float((w * out).sum())

    want = num_grad(loss, weight)
    dw = np.empty_like(weight)
    embed.embedding_backward(idx, w, dw, False)
    np.testing.assert_allclose(dw, want, rtol=1e-6, atol=1e-8)


def test_check_embedding_errors():
    with pytest.raises(ValueError, match=r"'out' has shape \(3,5\), expected \(3,2\)"):
        embed.check_embedding("embedding_forward", np.zeros(3), np.zeros((4, 2)), np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"shape \(0,2\): an empty table"):
        embed.check_embedding("embedding_forward", np.zeros(3), np.zeros((0, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="'indices' must be a real numpy array, got complex128"):
        embed.check_embedding("embedding_forward", np.zeros(3, complex), np.zeros((4, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"'indices' must have 1 dimensions, got shape \(3,1\)"):
        embed.check_embedding("embedding_forward", np.zeros((3, 1)), np.zeros((4, 2)), np.zeros((3, 2)))


# ---------------------------------------------------------------------------------------------
# dropout


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_mask_values_rate_and_seed(dtype):
    p = 0.3
    mask = np.empty((200, 50), dtype)
    random.check_dropout("dropout_mask", mask, p=p, seed_state=42)
    random.dropout_mask(mask, p, 42)
    scale = dtype(1 / (1 - p))
    assert set(np.unique(mask).tolist()) == {0.0, float(scale)}
    kept = np.count_nonzero(mask) / mask.size
    assert abs(kept - (1 - p)) < 0.02  # 10000 draws: 5 standard deviations is ~0.023
    again = np.empty_like(mask)
    random.dropout_mask(again, p, 42)
    np.testing.assert_array_equal(again, mask)
    random.dropout_mask(again, p, -1)  # continues the stream: a different mask
    assert not np.array_equal(again, mask)
    random.seed(42)
    random.dropout_mask(again, p, -1)
    np.testing.assert_array_equal(again, mask)


def test_dropout_p_zero_and_one():
    mask = np.empty(100)
    random.dropout_mask(mask, 0.0, 1)
    np.testing.assert_array_equal(mask, 1.0)
    random.dropout_mask(mask, 1.0, 1)   # nothing kept, scaled by 1/0: 0 * inf, NaN as in MXNet
    assert np.isnan(mask).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_apply(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    mask = np.empty_like(x)
    random.dropout_mask(mask, 0.5, 3)
    out = np.empty_like(x)
    random.check_dropout("dropout_apply", mask, x, out, p=0.5)
    random.dropout_apply(x, mask, out)
    np.testing.assert_array_equal(out, x * mask)


def test_check_dropout_errors():
    m = np.zeros(4)
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\], got nan"):
        random.check_dropout("dropout_mask", m, p=float("nan"))
    with pytest.raises(ValueError, match=r"'out' has shape \(5,\), expected \(4,\)"):
        random.check_dropout("dropout_apply", m, m.copy(), np.zeros(5))
    with pytest.raises(ValueError, match="seed_state"):
        random.check_dropout("dropout_mask", m, seed_state=2 ** 40)


# ---------------------------------------------------------------------------------------------
# a property test: softmax rows sum to 1 and are in [0, 1] for any finite input


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=12), st.sampled_from(DTYPES))
def test_softmax_property(row, dtype):
    x = np.array([row], dtype=dtype)
    out = np.empty_like(x)
    softmax.softmax_forward(x, out)
    assert np.all((out >= 0) & (out <= 1))
    assert abs(float(out.astype(np.float64).sum()) - 1) < 1e-5
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-6)
