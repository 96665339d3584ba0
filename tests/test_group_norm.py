"""GroupNorm as MXNet 1.x defines it: one gamma and beta per group (shape (num_groups,)), forward
and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.test_utils import check_numeric_gradient, check_symbolic_forward


def _reference(data, gamma, beta, groups, eps):
    n = data.shape[0]
    g = data.reshape(n, groups, -1)
    mean, var = g.mean(axis=2, keepdims=True), g.var(axis=2, keepdims=True)
    y = (g - mean) / np.sqrt(var + eps)
    return (y * gamma[None, :, None] + beta[None, :, None]).reshape(data.shape)


def test_gamma_and_beta_are_per_group():
    net = mx.sym.GroupNorm(mx.sym.Variable("data"), num_groups=3, name="gn")
    args, outs, _ = net.infer_shape(data=(2, 6, 4, 4))
    assert dict(zip(net.list_arguments(), args)) == {"data": (2, 6, 4, 4), "gn_gamma": (3,), "gn_beta": (3,)}
    with pytest.raises(mx.MXNetError, match="gamma"):
        net.simple_bind(mx.cpu(), data=(2, 6, 4, 4), gn_gamma=(6,))


def test_forward_and_gradients_match_the_per_group_definition():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(2, 4, 3, 2))
    gamma, beta = rng.uniform(0.5, 1.5, 2), rng.normal(size=2)
    net = mx.sym.GroupNorm(mx.sym.Variable("data"), mx.sym.Variable("gamma"), mx.sym.Variable("beta"),
                           num_groups=2, eps=1e-3)
    check_symbolic_forward(net, [data, gamma, beta], [_reference(data, gamma, beta, 2, 1e-3)],
                           dtype=np.float64, rtol=1e-10, atol=1e-12)
    check_numeric_gradient(net, [data, gamma, beta], numeric_eps=1e-5, rtol=1e-4, atol=1e-6, dtype=np.float64)
