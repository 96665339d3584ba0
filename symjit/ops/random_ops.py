"""Random samplers of MXNet 1.9.1 (``_random_<dist>``, public as ``random_<dist>``, and the
``*_like`` forms that take their shape from an input), drawn on every target from one seeded
generator.

Each element is a function of a 32-bit seed and the element's flat index (a counter-based
generator: murmur3's finaliser of the counter, as Dropout's masks on a GPU), so any thread computes
any element and no RNG state lives on a device. Each kernel call takes a fresh seed: the CPU kernel
draws it from numba's generator, which ``mx.random.seed`` seeds; a CUDA launch gets it from the host
(``symjit.random.next_seed``, seeded by ``mx.random.seed`` too). Seeded programs therefore repeat
their draws on each target. Samplers that need several draws (normal: Box-Muller; gamma:
Marsaglia-Tsang; poisson: Knuth's product for small means, else the PTRS rejection of Hörmann;
the negative binomials: gamma-poisson mixtures) take them from consecutive counters of the element's
own block (1024 per element).

The samplers have no gradient (as in MXNet).

>>> import symjit as mx
>>> mx.random.seed(7)
>>> x = mx.nd.random_uniform(low=2.0, high=3.0, shape=(1000,))
>>> bool((x.asnumpy() >= 2).all() and (x.asnumpy() < 3).all())
True
"""
from __future__ import annotations

import math

import numpy as np

from ..jitext import jitable
from .registry import Kind, OpDef, Param, register

__all__ = ["uniform01", "SAMPLERS", "OPS"]

_BLOCK = 1024   # counters per element


@jitable
def uniform01(seed, counter):
    """A uniform number in [0, 1) from ``seed`` and ``counter`` (53 random bits from two rounds of
    murmur3's 32-bit finaliser).

    >>> 0.0 <= uniform01(7, 3) < 1.0, uniform01(7, 3) == uniform01(7, 3)
    (True, True)
    """
    m = 0xFFFFFFFF
    h = (counter * 0x9E3779B1 + seed) & m
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    g = (h * 0x27D4EB2F + (counter >> 32) + seed * 0x165667B1) & m
    g ^= g >> 15
    g = (g * 0x85EBCA6B) & m
    g ^= g >> 13
    g = (g * 0xC2B2AE35) & m
    g ^= g >> 16
    return ((h >> 5) * 67108864.0 + (g >> 6)) * 1.1102230246251565e-16   # (a * 2**26 + b) / 2**53


@jitable
def _normal01(seed, counter):
    u1 = 1.0 - uniform01(seed, counter)   # (0, 1]
    u2 = uniform01(seed, counter + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@jitable
def _gamma1(seed, counter, alpha):
    """Gamma(alpha, 1) by Marsaglia-Tsang (alpha < 1 boosted by u**(1/alpha))."""
    boost = 1.0
    a = alpha
    if a < 1.0:
        boost = math.pow(1.0 - uniform01(seed, counter), 1.0 / a)
        a += 1.0
        counter += 1
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    for t in range(0, _BLOCK - 8, 3):
        x = _normal01(seed, counter + t)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - uniform01(seed, counter + t + 2)
        if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v * boost
    return d * boost


@jitable
def _poisson(seed, counter, lam):
    if lam <= 0.0:
        return 0.0
    if lam < 10.0:   # Knuth: count uniforms until their product drops below exp(-lam)
        limit = math.exp(-lam)
        prod = 1.0
        k = 0
        for t in range(_BLOCK - 4):
            prod *= uniform01(seed, counter + t)
            if prod <= limit:
                return float(k)
            k += 1
        return float(k)
    slam = math.sqrt(lam)   # PTRS (Hormann 1993)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    for t in range(0, _BLOCK - 4, 2):
        u = uniform01(seed, counter + t) - 0.5
        v = uniform01(seed, counter + t + 1)
        us = 0.5 - abs(u)
        k = float(math.floor((2.0 * a / us + b) * u + lam + 0.43))
        if us >= 0.07 and v <= vr:
            return k
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b)) <= \
                (-lam + k * loglam - math.lgamma(k + 1.0)):
            return k
    return float(math.floor(lam))


def sample_uniform(seed, i, low, high):
    return low + (high - low) * uniform01(seed, i * _BLOCK)


def sample_normal(seed, i, loc, scale):
    return loc + scale * _normal01(seed, i * _BLOCK)


def sample_exponential(seed, i, lam):
    return -math.log(1.0 - uniform01(seed, i * _BLOCK)) / lam


def sample_gamma(seed, i, alpha, beta):
    return _gamma1(seed, i * _BLOCK, alpha) * beta


def sample_poisson(seed, i, lam):
    return _poisson(seed, i * _BLOCK, lam)


def sample_negative_binomial(seed, i, k, p):
    """Failures before the k-th success of trials with success probability p: Poisson of a
    Gamma(k, (1 - p) / p) rate."""
    if p >= 1.0:
        return 0.0
    rate = _gamma1(seed, i * _BLOCK, k) * (1.0 - p) / p
    return _poisson(seed, i * _BLOCK + _BLOCK // 2, rate)


def sample_generalized_negative_binomial(seed, i, mu, alpha):
    """Mean mu, variance mu + alpha * mu**2: Poisson of a Gamma(1/alpha, alpha * mu) rate (Poisson
    of mu when alpha is 0)."""
    if alpha <= 0.0:
        return _poisson(seed, i * _BLOCK, mu)
    rate = _gamma1(seed, i * _BLOCK, 1.0 / alpha) * alpha * mu
    return _poisson(seed, i * _BLOCK + _BLOCK // 2, rate)


def sample_randint(seed, i, low, high):
    return math.floor(low + (high - low) * uniform01(seed, i * _BLOCK))


# name -> (sampler, params (name, default, doc), default dtype, doc)
SAMPLERS = {
    "uniform": (sample_uniform, (("low", 0.0, "lower bound"), ("high", 1.0, "upper bound (excluded)")),
                "float32", "uniform on [low, high)"),
    "normal": (sample_normal, (("loc", 0.0, "mean"), ("scale", 1.0, "standard deviation")), "float32",
               "normal (Gaussian)"),
    "exponential": (sample_exponential, (("lam", 1.0, "rate (1 / mean)"),), "float32", "exponential"),
    "gamma": (sample_gamma, (("alpha", 1.0, "shape"), ("beta", 1.0, "scale")), "float32", "gamma"),
    "poisson": (sample_poisson, (("lam", 1.0, "mean"),), "float32", "Poisson"),
    "negative_binomial": (sample_negative_binomial,
                          (("k", 1, "successes"), ("p", 1.0, "success probability")),
                          "float32", "negative binomial (failures before the k-th success)"),
    "generalized_negative_binomial": (sample_generalized_negative_binomial,
                                      (("mu", 1.0, "mean"), ("alpha", 1.0, "dispersion")), "float32",
                                      "generalized negative binomial (variance mu + alpha * mu**2)"),
    "randint": (sample_randint, (("low", None, "lower bound"), ("high", None, "upper bound (excluded)")),
                "int32", "uniform integers in [low, high)"),
}

_ALIASES = {"uniform": ("random_uniform", "uniform"), "normal": ("random_normal", "normal")}


def _params(spec: tuple) -> tuple[Param, ...]:
    """The distribution's params: ints for randint's bounds (required) and k, floats otherwise."""
    return tuple(Param(name, "int", doc=doc) if default is None else
                 Param(name, "int" if name == "k" else "float", default, doc=doc)
                 for name, default, doc in spec)


OPS: list[str] = []
for _dist, (_fn, _spec, _dtype, _what) in SAMPLERS.items():
    _common = (Param("shape", "shape", (), doc="the output shape"), Param("ctx", "str", "", doc="ignored"),
               Param("dtype", "dtype", _dtype, doc="the output dtype"))
    register(OpDef(
        name=f"_random_{_dist}", aliases=_ALIASES.get(_dist, (f"random_{_dist}",)), arguments=(),
        params=_params(_spec) + _common,
        shape=lambda p, ins, aux: ([], [tuple(p["shape"]) or (1,)], []),
        dtype=lambda p, ins, aux: ([], [np.dtype(p["dtype"])], []), kind=Kind.INJECTIVE,
        doc=f"Samples of ``shape`` from the {_what} distribution.",
        extra={"family": "random", "no_grad": True, "sampler": _fn, "params": [n for n, *_ in _spec]},
    ))
    OPS.append(f"_random_{_dist}")
    if _dist != "randint":
        register(OpDef(
            name=f"_random_{_dist}_like", params=_params(_spec),
            shape=lambda p, ins, aux: ([ins[0]], [ins[0]], []), kind=Kind.INJECTIVE,
            doc=f"Samples from the {_what} distribution, shaped like data (which lends only its shape "
                "and dtype).",
            extra={"family": "random", "no_grad": True, "sampler": _fn, "params": [n for n, *_ in _spec]},
        ))
        OPS.append(f"_random_{_dist}_like")
del _dist, _fn, _spec, _dtype, _what, _common
