"""Cases for the sampler densities (symjit/ops/random_pdf.py) against scipy.stats (MXNet 1.9.1's
parameterisations: gamma's beta is a rate, uniform ignores the support); gradients with respect to
samples and parameters by finite differences of the expansions."""
from __future__ import annotations

import numpy as np
from scipy import special, stats

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(71)


def _pdf(name, params, ref, sample, is_log=False, no_grad=(), id=""):
    inputs = {"sample": sample, **params}
    names = list(inputs)

    def build(v):
        return getattr(mx.sym, f"random_pdf_{name}")(*[v[n] for n in names], is_log=is_log)

    def want(**kw):
        p = [kw[n][(...,) + (None,) * (kw["sample"].ndim - kw[n].ndim)] for n in names[1:]]
        out = ref(kw["sample"], *p)
        return np.log(out) if is_log else out
    return Case(f"_random_pdf_{name}", build, inputs, want, no_grad=no_grad,
                id=id or name + ("_log" if is_log else ""))


def _dirichlet(sample, alpha):
    a = alpha[:, None, :]
    logp = special.gammaln(a.sum(-1)) - special.gammaln(a).sum(-1) + ((a - 1) * np.log(sample)).sum(-1)
    return np.exp(logp)


def _nbinom(x, k, p):
    return stats.nbinom.pmf(x, k, p)


_counts = np.array([[0.0, 1.0, 3.0], [2.0, 5.0, 0.0]])
_simplex = R.dirichlet([1.0, 2.0, 3.0], size=(2, 4))

CASES = [
    _pdf("uniform", {"low": np.array([0.0, 1.0]), "high": np.array([1.8, 3.5])},
         lambda x, lo, hi: np.broadcast_to(1.0 / (hi - lo), x.shape), R.uniform(0, 4, (2, 3))),
    _pdf("normal", {"mu": R.normal(size=(2,)), "sigma": R.uniform(0.5, 2, (2,))},
         lambda x, mu, s: stats.norm.pdf(x, mu, s), R.normal(size=(2, 3))),
    _pdf("normal", {"mu": R.normal(size=(2, 2)), "sigma": R.uniform(0.5, 2, (2, 2))},
         lambda x, mu, s: stats.norm.pdf(x, mu, s), R.normal(size=(2, 2, 3)), is_log=True),
    _pdf("gamma", {"alpha": R.uniform(1, 3, (2,)), "beta": R.uniform(0.5, 2, (2,))},
         lambda x, a, b: stats.gamma.pdf(x, a, scale=1 / b), R.uniform(0.2, 3, (2, 3))),
    _pdf("exponential", {"lam": R.uniform(0.5, 2, (3,))}, lambda x, lam: stats.expon.pdf(x, scale=1 / lam),
         R.uniform(0.1, 2, (3, 2))),
    _pdf("poisson", {"lam": np.array([1.0, 2.5])}, lambda x, lam: stats.poisson.pmf(x, lam), _counts,
         no_grad=("sample",)),
    _pdf("negative_binomial", {"k": np.array([2.0, 3.5]), "p": np.array([0.3, 0.6])}, _nbinom, _counts,
         no_grad=("sample",)),
    _pdf("generalized_negative_binomial", {"mu": np.array([2.0, 3.5]), "alpha": np.array([0.3, 0.6])},
         lambda x, mu, a: _nbinom(x, 1 / a, 1 / (1 + a * mu)), _counts, no_grad=("sample",), is_log=True),
    Case("_random_pdf_dirichlet", lambda v: mx.sym.random_pdf_dirichlet(v["sample"], v["alpha"]),
         {"sample": _simplex, "alpha": np.array([[1.5, 2.0, 3.0], [0.8, 1.2, 2.5]])},
         lambda sample, alpha: _dirichlet(sample, alpha)),
]
