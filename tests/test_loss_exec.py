"""Loss heads and softmax through bind/forward/backward: behaviour the case tables cannot express
(errors raised by kernels, head gradients that are ignored)."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError


def test_softmax_length_out_of_range_is_an_error():
    net = mx.sym.softmax(mx.sym.Variable("x"), mx.sym.Variable("length"), axis=-1, use_length=True)
    args = {"x": mx.nd.array(np.ones((2, 3))), "length": mx.nd.array(np.array([2, 4]), dtype="int64")}
    ex = net.bind(mx.cpu(), args, grad_req="null")
    with pytest.raises(MXNetError, match="length"):
        ex.forward()


def test_makeloss_ignores_head_gradients():
    x = np.arange(6.0).reshape(2, 3)
    net = mx.sym.MakeLoss(mx.sym.Variable("x"), grad_scale=3.0, normalization="batch")
    grad = mx.nd.zeros((2, 3), dtype="float64")
    ex = net.bind(mx.cpu(), {"x": mx.nd.array(x, dtype="float64")}, args_grad={"x": grad})
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), x)
    ex.backward([mx.nd.array(np.full((2, 3), 7.0), dtype="float64")])
    np.testing.assert_array_equal(grad.asnumpy(), np.full((2, 3), 1.5))


def test_softmax_output_float32_step():
    data = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], dtype=np.float32)
    label = np.array([1.0, 2.0], dtype=np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.Variable("data"), mx.sym.Variable("label"))
    grad = mx.nd.zeros((2, 3))
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(data), "label": mx.nd.array(label)},
                  args_grad={"data": grad}, grad_req={"data": "write", "label": "null"})
    prob = ex.forward(is_train=True)[0].asnumpy()
    e = np.exp(data - data.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob, want, rtol=1e-6)
    ex.backward()
    np.testing.assert_allclose(grad.asnumpy(), want - np.eye(3)[[1, 2]], rtol=1e-5, atol=1e-7)
