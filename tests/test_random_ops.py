"""The registered samplers (symjit/ops/random_ops.py): their moments against the distributions'
(on the CPU with many draws, on the CUDA simulator with few and looser bounds), seeded
reproducibility, fresh draws per call, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx

# (distribution, params, mean, variance)
MOMENTS = [
    ("uniform", {"low": -1.0, "high": 3.0}, 1.0, 16.0 / 12),
    ("normal", {"loc": 1.0, "scale": 2.0}, 1.0, 4.0),
    ("exponential", {"scale": 0.5}, 0.5, 0.25),
    ("gamma", {"alpha": 0.5, "beta": 2.0}, 1.0, 2.0),
    ("gamma", {"alpha": 3.0, "beta": 2.0}, 6.0, 12.0),
    ("poisson", {"lam": 3.0}, 3.0, 3.0),
    ("poisson", {"lam": 30.0}, 30.0, 30.0),
    ("negative_binomial", {"k": 3, "p": 0.4}, 4.5, 11.25),
    ("generalized_negative_binomial", {"mu": 2.0, "alpha": 0.5}, 2.0, 4.0),
    ("randint", {"low": -3, "high": 5}, 0.5, (8 * 8 - 1) / 12),
]


def _draws(dist, params, n, ctx):
    dtype = None if dist == "randint" else "float64"
    sym = getattr(mx.sym.random, dist)(shape=(n,), dtype=dtype, **params)
    return sym.simple_bind(ctx).forward()[0].asnumpy().astype(np.float64)


def _check_moments(x, mean, var, sigmas):
    n = x.size
    assert abs(x.mean() - mean) < sigmas * np.sqrt(var / n) + 1e-12, (x.mean(), mean)
    # the sample variance's standard error, for a heavy-tailed bound: sqrt(2 / n) * var * 3
    assert abs(x.var() - var) < sigmas * var * np.sqrt(2.0 / n) * 3, (x.var(), var)


@pytest.mark.parametrize("dist, params, mean, var", MOMENTS,
                         ids=[f"{d}-{i}" for i, (d, *_) in enumerate(MOMENTS)])
def test_moments_on_the_cpu(dist, params, mean, var):
    mx.random.seed(11)
    _check_moments(_draws(dist, params, 40000, mx.cpu()), mean, var, 6)


def test_supports():
    mx.random.seed(5)
    u = _draws("uniform", {"low": 2.0, "high": 3.0}, 5000, mx.cpu())
    assert u.min() >= 2.0 and u.max() < 3.0
    r = _draws("randint", {"low": -2, "high": 2}, 5000, mx.cpu())
    assert set(np.unique(r)) == {-2, -1, 0, 1}
    for dist, params in (("poisson", {"lam": 0.5}), ("poisson", {"lam": 50.0}),
                         ("negative_binomial", {"k": 2, "p": 0.3})):
        x = _draws(dist, params, 2000, mx.cpu())
        assert (x >= 0).all() and (x == np.floor(x)).all(), dist


def test_seeded_draws_repeat_and_each_call_draws_anew():
    sym = mx.sym.random.normal(shape=(6,)) + mx.sym.random.uniform_like(mx.sym.Variable("x"))
    ex = sym.simple_bind(mx.cpu(), x=(6,))
    mx.random.seed(42)
    a = ex.forward()[0].asnumpy()
    b = ex.forward()[0].asnumpy()
    mx.random.seed(42)
    assert (ex.forward()[0].asnumpy() == a).all() and not (a == b).all()
    mx.random.seed(42)
    first = mx.nd.random.gamma(2.0, 1.0, shape=(5,)).asnumpy()
    mx.random.seed(42)
    assert (mx.nd.random.gamma(2.0, 1.0, shape=(5,)).asnumpy() == first).all()


def test_symbol_parameters_are_a_clear_error():
    with pytest.raises(mx.MXNetError, match="_sample_uniform"):
        mx.sym.random.uniform(mx.sym.Variable("lo"), 1.0)
    with pytest.raises(mx.MXNetError, match="gamma"):
        mx.nd.random.gamma(mx.nd.ones((2,)), 1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dist, params, mean, var", MOMENTS[:6], ids=[d for d, *_ in MOMENTS[:6]])
def test_moments_on_the_cuda_target(dist, params, mean, var):
    mx.random.seed(3)
    x = _draws(dist, params, 512, mx.gpu(0))
    _check_moments(x, mean, var, 8)
    mx.random.seed(3)
    assert (_draws(dist, params, 512, mx.gpu(0)) == x).all()
