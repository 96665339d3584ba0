"""mx.nd.sgd_update / sgd_mom_update against a numpy re-implementation of MXNet's formulas."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx


def _g(grad, rescale, clip):
    g = grad * rescale
    return np.clip(g, -clip, clip) if clip >= 0 else g


@pytest.mark.parametrize("wd, rescale, clip", [(0.0, 1.0, -1.0), (1e-3, 0.01, -1.0), (1e-2, 1.0, 0.3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_and_momentum_steps(wd, rescale, clip, dtype):
    rng = np.random.default_rng(0)
    w0, g0 = rng.normal(size=(7, 5)).astype(dtype), rng.normal(size=(7, 5)).astype(dtype)
    w, g, m = mx.nd.array(w0, dtype=dtype), mx.nd.array(g0, dtype=dtype), mx.nd.zeros((7, 5), dtype=dtype)
    ww, mm = w0.astype(np.float64), np.zeros((7, 5))
    for _ in range(3):
        mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, wd=wd, rescale_grad=rescale,
                             clip_gradient=clip, out=w)
        mm = 0.9 * mm - 0.1 * (_g(g0, rescale, clip) + wd * ww)
        ww = ww + mm
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(w.asnumpy(), ww, rtol=tol, atol=tol)
    np.testing.assert_allclose(m.asnumpy(), mm, rtol=tol, atol=tol)
    w2 = mx.nd.array(w0, dtype=dtype)
    mx.nd.sgd_update(w2, g, lr=0.5, wd=wd, rescale_grad=rescale, clip_gradient=clip)
    np.testing.assert_allclose(w2.asnumpy(), w0 - 0.5 * (_g(g0, rescale, clip) + wd * w0), rtol=tol, atol=tol)


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(mx.MXNetError, match=r"sgd_mom_update mom: shape \(3,\)"):
        mx.nd.sgd_mom_update(mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.zeros((3,)), lr=0.1)
