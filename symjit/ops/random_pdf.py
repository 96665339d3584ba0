"""The probability densities of MXNet's samplers, ``random_pdf_<distribution>`` (registered as
``_random_pdf_<distribution>``): composites of elementwise and broadcast ops, so they run and
differentiate (with respect to the samples and the parameters) on every target.

The parameters share one shape P; ``sample`` has shape P + (m, ...): every sample at index i of P
takes the parameters at i (``dirichlet``: ``alpha`` is P + (K,), ``sample`` P + (m, ...) + (K,),
one density per K-vector). ``is_log`` returns the log-density. Formulas (MXNet 1.9.1's, checked
against its outputs): uniform ``1 / (high - low)`` (not checked against the support, as MXNet),
normal, gamma with ``beta`` the *rate*, exponential ``lam exp(-lam x)``, poisson, negative
binomial ``(k, p)``, generalized negative binomial ``(mu, alpha)`` = negative binomial with
``k = 1 / alpha``, ``p = 1 / (1 + alpha mu)``, and dirichlet. The discrete densities use
``gammaln``, so their gradient with respect to the sample is that of the continuous extension.

>>> import symjit as mx
>>> x = mx.nd.random_pdf_exponential(mx.nd.array([[0.0, 1.0]]), mx.nd.array([2.0]))
>>> x.asnumpy().astype('float64').round(4).tolist()
[[2.0, 0.2707]]
"""
from __future__ import annotations

import math

from .registry import OpDef, Param, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []

_IS_LOG = Param("is_log", "bool", False, doc="return the log-density")


def _shape(n_params: int, vector: bool = False):
    def shape(p: dict, ins: list, aux: list):
        sample, params = ins[0], ins[1:]
        known = next((s for s in params if s is not None), None)
        if sample is None or known is None:
            return list(ins), [None], []
        if any(s is not None and tuple(s) != tuple(known) for s in params):
            raise RuleError("the parameters must share one shape, got "
                            + ", ".join(shape_str(s) for s in params if s is not None))
        lead = tuple(known[:-1]) if vector else tuple(known)
        ok = tuple(sample[:len(lead)]) == lead and (not vector or sample[-1] == known[-1])
        if not ok or len(sample) < len(known):
            raise RuleError(f"sample {shape_str(sample)} must start with the parameters' shape "
                            f"{shape_str(known)}" + (" and end with its last axis" if vector else ""))
        return [sample] + [known] * n_params, [tuple(sample[:-1]) if vector else tuple(sample)], []
    return shape


def _dtype(p: dict, ins: list, aux: list):
    known = next((t for t in ins if t is not None), None)
    if known is not None:
        need_float(known, "sample")
    return [known] * len(ins), [known], []


def _spread(b, param: int, like: int, vector: bool = False) -> int:
    """``param`` (shape P, or P + (K,)) broadcast over the sample ``like``."""
    ps, ls = b.g.values[param].shape, b.g.values[like].shape
    if vector:
        shape = ps[:-1] + (1,) * (len(ls) - len(ps)) + ps[-1:]
    else:
        shape = ps + (1,) * (len(ls) - len(ps))
    return b.add1("broadcast_like", b.add1("Reshape", param, shape=shape), like)


def _finish(b, logp: int, p: dict) -> list[int]:
    return [logp if p["is_log"] else b.add1("exp", logp)]


def _nb_log(b, x: int, k: int, prob: int) -> int:
    """log of Γ(x + k) / (Γ(k) x!) p^k (1 - p)^x."""
    g = b.add1("elemwise_sub", b.add1("gammaln", b.add1("elemwise_add", x, k)), b.add1("gammaln", k))
    g = b.add1("elemwise_sub", g, b.add1("gammaln", b.add1("_plus_scalar", x, scalar=1.0)))
    g = b.add1("elemwise_add", g, b.add1("elemwise_mul", k, b.add1("log", prob)))
    return b.add1("elemwise_add", g, b.add1("elemwise_mul", x,
                                            b.add1("log", b.add1("_rminus_scalar", prob, scalar=1.0))))


def _uniform(b, x, ps, p):
    low, high = (_spread(b, v, x) for v in ps)
    return b.add1("negative", b.add1("log", b.add1("elemwise_sub", high, low)))


def _normal(b, x, ps, p):
    mu, sigma = (_spread(b, v, x) for v in ps)
    z = b.add1("elemwise_div", b.add1("elemwise_sub", x, mu), sigma)
    out = b.add1("_mul_scalar", b.add1("square", z), scalar=-0.5)
    out = b.add1("elemwise_sub", out, b.add1("log", sigma))
    return b.add1("_plus_scalar", out, scalar=-0.5 * math.log(2 * math.pi))


def _gamma(b, x, ps, p):
    alpha, beta = (_spread(b, v, x) for v in ps)
    out = b.add1("elemwise_mul", alpha, b.add1("log", beta))
    out = b.add1("elemwise_add", out, b.add1("elemwise_mul", b.add1("_plus_scalar", alpha, scalar=-1.0),
                                             b.add1("log", x)))
    out = b.add1("elemwise_sub", out, b.add1("elemwise_mul", beta, x))
    return b.add1("elemwise_sub", out, b.add1("gammaln", alpha))


def _exponential(b, x, ps, p):
    lam = _spread(b, ps[0], x)
    return b.add1("elemwise_sub", b.add1("log", lam), b.add1("elemwise_mul", lam, x))


def _poisson(b, x, ps, p):
    lam = _spread(b, ps[0], x)
    out = b.add1("elemwise_sub", b.add1("elemwise_mul", x, b.add1("log", lam)), lam)
    return b.add1("elemwise_sub", out, b.add1("gammaln", b.add1("_plus_scalar", x, scalar=1.0)))


def _negative_binomial(b, x, ps, p):
    k, prob = (_spread(b, v, x) for v in ps)
    return _nb_log(b, x, k, prob)


def _generalized_negative_binomial(b, x, ps, p):
    mu, alpha = (_spread(b, v, x) for v in ps)
    k = b.add1("_rdiv_scalar", alpha, scalar=1.0)
    prob = b.add1("_rdiv_scalar", b.add1("_plus_scalar", b.add1("elemwise_mul", alpha, mu), scalar=1.0),
                  scalar=1.0)
    return _nb_log(b, x, k, prob)


def _dirichlet(b, x, ps, p):
    alpha = _spread(b, ps[0], x, vector=True)
    terms = b.add1("elemwise_mul", b.add1("_plus_scalar", alpha, scalar=-1.0), b.add1("log", x))
    nd = len(b.g.values[x].shape)
    out = b.add1("sum", terms, axis=(nd - 1,))
    norm = b.add1("elemwise_sub", b.add1("gammaln", b.add1("sum", ps[0], axis=(-1,))),
                  b.add1("sum", b.add1("gammaln", ps[0]), axis=(-1,)))
    return b.add1("elemwise_add", out, _spread(b, norm, out))


_DISTRIBUTIONS = {
    "uniform": (("low", "high"), _uniform, "uniform on [low, high]"),
    "normal": (("mu", "sigma"), _normal, "normal with mean mu and standard deviation sigma"),
    "gamma": (("alpha", "beta"), _gamma, "gamma with shape alpha and rate beta"),
    "exponential": (("lam",), _exponential, "exponential with rate lam"),
    "poisson": (("lam",), _poisson, "Poisson with rate lam"),
    "negative_binomial": (("k", "p"), _negative_binomial, "negative binomial: failures before k successes "
                                                          "of probability p"),
    "generalized_negative_binomial": (("mu", "alpha"), _generalized_negative_binomial,
                                      "negative binomial with mean mu and dispersion alpha"),
    "dirichlet": (("alpha",), _dirichlet, "Dirichlet with concentration alpha (last axis)"),
}

for _dist, (_names, _logpdf, _what) in _DISTRIBUTIONS.items():
    register(OpDef(
        name=f"_random_pdf_{_dist}", aliases=(f"random_pdf_{_dist}",), arguments=("sample", *_names),
        params=(_IS_LOG,), shape=_shape(len(_names), vector=_dist == "dirichlet"), dtype=_dtype,
        expand=lambda b, ins, p, f=_logpdf: _finish(b, f(b, ins[0], ins[1:], p), p),
        hint=f"random_pdf_{_dist}", extra={"family": "random_pdf"},
        doc=f"Density (log-density with is_log) of samples of the {_what} distribution.",
    ))
