"""Cases for the random samplers (symjit/ops/random_ops.py): what can be checked exactly of a random
draw, on every target (support, integrality, degenerate parameters), with the gradient of a
sampler-scaled input through the sampler (samplers have none)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(31)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _integral(s):
    """0 where the draw is a (non-negative) integer: floor(s) - s + (s < 0)."""
    return mx.sym.floor(s) - s + mx.sym.broadcast_lesser(s, mx.sym.zeros((1,), dtype="float64"))


def _indicator(s):
    return mx.sym.broadcast_greater_equal(s, mx.sym.zeros((1,), dtype="float64"))


CASES = [
    # degenerate distributions: exact values
    Case("_random_uniform", lambda v: mx.sym.random.uniform(2.0, 2.0, shape=(3, 4), dtype="float64") * v["x"],
         {"x": rnd(3, 4)}, lambda x: 2.0 * x),
    Case("_random_normal", lambda v: mx.sym.random.normal(1.5, 0.0, shape=(3,), dtype="float64") + v["x"],
         {"x": rnd(3)}, lambda x: x + 1.5),
    Case("_random_generalized_negative_binomial",
         lambda v: mx.sym.random.generalized_negative_binomial(0.0, 0.5, shape=(4,), dtype="float64")
         + v["x"],
         {"x": rnd(4)}, lambda x: x.copy()),
    Case("_random_negative_binomial",
         lambda v: mx.sym.random.negative_binomial(3, 1.0, shape=(4,), dtype="float64") + v["x"],
         {"x": rnd(4)}, lambda x: x.copy()),
    Case("_random_randint", lambda v: mx.sym.random.randint(4, 5, shape=(2, 3)), {},
         lambda: np.full((2, 3), 4, np.int32), grad="none"),
    # supports: every draw inside it
    Case("_random_exponential",
         lambda v: _indicator(mx.sym.random.exponential(2.0, shape=(64,), dtype="float64")),
         {}, lambda: np.ones(64), grad="none"),
    Case("_random_gamma", lambda v: _indicator(mx.sym.random.gamma(0.7, 2.0, shape=(64,), dtype="float64")),
         {}, lambda: np.ones(64), grad="none"),
    Case("_random_poisson", lambda v: _integral(mx.sym.random.poisson(4.0, shape=(64,), dtype="float64")),
         {}, lambda: np.zeros(64), grad="none", id="small_mean"),
    Case("_random_poisson", lambda v: _integral(mx.sym.random.poisson(40.0, shape=(64,), dtype="float64")),
         {}, lambda: np.zeros(64), grad="none", id="large_mean"),
    Case("_random_uniform_like", lambda v: mx.sym.random.uniform_like(v["x"], 1.0, 1.0) * v["x"],
         {"x": rnd(2, 3)}, lambda x: x.copy()),
    Case("_random_normal_like", lambda v: mx.sym.random.normal_like(v["x"], loc=-1.0, scale=0.0) + v["x"],
         {"x": rnd(3)}, lambda x: x - 1.0),
    Case("_random_exponential_like", lambda v: _indicator(mx.sym.random.exponential_like(v["x"], lam=3.0)),
         {"x": rnd(8)}, lambda x: np.ones(8), grad="none"),
    Case("_random_gamma_like", lambda v: _indicator(mx.sym.random.gamma_like(v["x"], alpha=2.0, beta=0.5)),
         {"x": rnd(8)}, lambda x: np.ones(8), grad="none"),
    Case("_random_poisson_like", lambda v: mx.sym.random.poisson_like(v["x"], lam=0.0) + v["x"],
         {"x": rnd(5)}, lambda x: x.copy()),
    Case("_random_negative_binomial_like", lambda v: mx.sym.random.negative_binomial_like(v["x"], k=2, p=1.0)
         + v["x"], {"x": rnd(5)}, lambda x: x.copy()),
    Case("_random_generalized_negative_binomial_like",
         lambda v: mx.sym.random.generalized_negative_binomial_like(v["x"], mu=0.0, alpha=1.0) + v["x"],
         {"x": rnd(5)}, lambda x: x.copy()),
    # one distribution per element (sample_*): degenerate rows are exact, supports hold
    Case("_sample_uniform", lambda v: mx.sym.sample_uniform(v["lo"], v["lo"], shape=(3,)) * v["x"],
         {"lo": np.array([1.0, -2.0]), "x": rnd(2, 3)}, lambda lo, x: lo[:, None] * x, no_grad=("lo",)),
    Case("_sample_normal", lambda v: mx.sym.sample_normal(v["mu"], v["sigma"], shape=(2, 2)) + v["x"],
         {"mu": np.array([0.5, 3.0]), "sigma": np.zeros(2), "x": rnd(2, 2, 2)},
         lambda mu, sigma, x: x + mu[:, None, None], no_grad=("mu", "sigma")),
    Case("_sample_gamma", lambda v: _indicator(mx.sym.sample_gamma(v["a"], v["b"], shape=(16,))),
         {"a": np.array([0.5, 4.0]), "b": np.array([1.0, 0.2])}, lambda a, b: np.ones((2, 16)), grad="none"),
    Case("_sample_exponential", lambda v: _indicator(mx.sym.sample_exponential(v["lam"], shape=(16,))),
         {"lam": np.array([0.5, 4.0])}, lambda lam: np.ones((2, 16)), grad="none"),
    Case("_sample_poisson", lambda v: _integral(mx.sym.sample_poisson(v["lam"], shape=(16,))),
         {"lam": np.array([2.0, 40.0])}, lambda lam: np.zeros((2, 16)), grad="none"),
    Case("_sample_negative_binomial",
         lambda v: mx.sym.sample_negative_binomial(v["k"], v["p"], shape=(4,)) + v["x"],
         {"k": np.array([2.0, 3.0]), "p": np.ones(2), "x": rnd(2, 4)}, lambda k, p, x: x.copy(),
         no_grad=("k", "p")),
    Case("_sample_generalized_negative_binomial",
         lambda v: mx.sym.sample_generalized_negative_binomial(v["mu"], v["alpha"], shape=(4,)) + v["x"],
         {"mu": np.zeros(2), "alpha": np.array([0.5, 1.0]), "x": rnd(2, 4)}, lambda mu, alpha, x: x.copy(),
         no_grad=("mu", "alpha")),
    Case("_sample_multinomial", lambda v: mx.sym.sample_multinomial(v["p"], shape=(3,)),
         {"p": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])}, lambda p: np.array([[1, 1, 1], [2, 2, 2]],
                                                                                 dtype=np.int32),
         grad="none"),
    Case("_sample_multinomial", lambda v: mx.sym.sample_multinomial(v["p"], shape=(3,), get_prob=True)[1],
         {"p": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])}, lambda p: np.zeros((2, 3)), id="log_prob"),
    Case("_shuffle", lambda v: mx.sym.sort(mx.sym.shuffle(v["x"]), axis=0), {"x": rnd(7)},
         lambda x: np.sort(x), grad="none"),
]
