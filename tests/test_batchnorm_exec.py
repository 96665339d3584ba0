"""BatchNorm's aux states through bind/forward: the moving statistics are updated in place by a
training forward (``moving = moving * momentum + batch * (1 - momentum)``, biased batch variance)
and left alone by inference and by ``use_global_stats``."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx

R = np.random.default_rng(5)


def _bind(shape=(4, 3, 2), dtype="float64", **params):
    c = shape[params.get("axis", 1)]
    net = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn", **params)
    data = R.uniform(-1.0, 2.0, shape).astype(dtype)
    args = {"data": mx.nd.array(data, dtype=dtype),
            "bn_gamma": mx.nd.array(R.uniform(0.5, 1.5, c), dtype=dtype),
            "bn_beta": mx.nd.array(R.uniform(-1.0, 1.0, c), dtype=dtype)}
    mm, mv = R.uniform(-0.5, 0.5, c), R.uniform(0.5, 1.5, c)
    aux = {"bn_moving_mean": mx.nd.array(mm, dtype=dtype), "bn_moving_var": mx.nd.array(mv, dtype=dtype)}
    ex = net.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    return ex, data, mm, mv


@pytest.mark.parametrize("axis", [1, -1])
def test_training_forward_updates_moving_stats(axis):
    ex, data, mm, mv = _bind(momentum=0.8, axis=axis)
    ex.forward(is_train=True)
    other = tuple(i for i in range(data.ndim) if i != axis % data.ndim)
    want_mean = mm * 0.8 + data.mean(axis=other) * 0.2
    want_var = mv * 0.8 + data.var(axis=other) * 0.2
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), want_mean, rtol=1e-12)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_var"].asnumpy(), want_var, rtol=1e-12)
    ex.forward(is_train=True)   # a second step decays again
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(),
                               want_mean * 0.8 + data.mean(axis=other) * 0.2, rtol=1e-12)


def test_inference_forward_keeps_moving_stats_and_uses_them():
    ex, data, mm, mv = _bind(fix_gamma=True, eps=1e-3)
    out = ex.forward(is_train=False)[0].asnumpy()
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), mm)
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_var"].asnumpy(), mv)
    beta = ex.arg_dict["bn_beta"].asnumpy()
    want = (data - mm[:, None]) / np.sqrt(mv[:, None] + 1e-3) + beta[:, None]
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_use_global_stats_keeps_moving_stats():
    ex, _, mm, mv = _bind(use_global_stats=True)
    ex.forward(is_train=True)
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), mm)
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_var"].asnumpy(), mv)


def test_float32_training_step():
    ex, data, mm, mv = _bind(dtype="float32", fix_gamma=False)
    out = ex.forward(is_train=True)[0].asnumpy()
    assert out.dtype == np.float32
    mean, var = data.mean(axis=(0, 2)), data.var(axis=(0, 2))
    gamma, beta = ex.arg_dict["bn_gamma"].asnumpy(), ex.arg_dict["bn_beta"].asnumpy()
    want = (data - mean[:, None]) / np.sqrt(var[:, None] + 1e-3) * gamma[:, None] + beta[:, None]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_var"].asnumpy(), mv * 0.9 + var * 0.1, rtol=1e-5)


@pytest.mark.parametrize("op, third", [
    ("BatchNorm", lambda var, eps: 1.0 / np.sqrt(var + eps)),
    ("SyncBatchNorm", lambda var, eps: var),
])
def test_output_mean_var_third_output(op, third):
    # with output_mean_var a training pass also gives the batch mean and, third, BatchNorm's
    # inverse standard deviation 1/sqrt(var + eps) but SyncBatchNorm's (biased) variance
    data = R.uniform(-1.0, 2.0, (5, 3, 4))
    fn = mx.nd.BatchNorm if op == "BatchNorm" else mx.nd.contrib.SyncBatchNorm
    gamma, beta = mx.nd.ones((3,), dtype="float64"), mx.nd.zeros((3,), dtype="float64")
    mm, mv = mx.nd.zeros((3,), dtype="float64"), mx.nd.ones((3,), dtype="float64")
    x = mx.nd.array(data, dtype="float64")
    with mx.autograd.record():
        out, mean, last = fn(x, gamma, beta, mm, mv, eps=0.01, fix_gamma=False, output_mean_var=True)
    var = data.var(axis=(0, 2))
    np.testing.assert_allclose(mean.asnumpy(), data.mean(axis=(0, 2)), rtol=1e-10)
    np.testing.assert_allclose(last.asnumpy(), third(var, 0.01), rtol=1e-9)
    np.testing.assert_allclose(out.asnumpy(), (data - data.mean(axis=(0, 2), keepdims=True))
                               / np.sqrt(data.var(axis=(0, 2), keepdims=True) + 0.01), rtol=1e-9)
