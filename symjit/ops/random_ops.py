"""Random samplers of MXNet 1.9.1 (``_random_<dist>``, public as ``random_<dist>``, and the
``*_like`` forms that take their shape from an input), drawn on every target from one seeded
generator.

Each element is a function of a 32-bit seed and the element's flat index (a counter-based
generator: murmur3's finaliser of the counter, as Dropout's masks on a GPU), so any thread computes
any element and no RNG state lives on a device. Each kernel call takes a fresh seed from one stream,
numba's generator of the calling thread, which ``mx.random.seed`` seeds: the CPU kernel draws it
itself, a CUDA launch gets the same draw made on the host (``symjit.random.next_seed``). Seeded
programs therefore repeat their draws, and a seeded call draws the same numbers on each target.
The records are the one table of the distributions: ``mx.random``, ``mx.nd.random`` and
``mx.sym.random`` make a function of each (:func:`distributions`, with the front end's signature,
:func:`front_signature`, and parameters, :func:`op_params`).

Samplers that need several draws (normal: Box-Muller; gamma: Marsaglia-Tsang; poisson: Knuth's
product for small means, else the PTRS rejection of Hörmann; the negative binomials: gamma-poisson
mixtures) take them from consecutive counters of the element's own block (1024 per element).

The samplers have no gradient (as in MXNet).

>>> import symjit as mx
>>> mx.random.seed(7)
>>> x = mx.nd.random_uniform(low=2.0, high=3.0, shape=(1000,))
>>> bool((x.asnumpy() >= 2).all() and (x.asnumpy() < 3).all())
True
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import ParamError
from ..jitext import jitable
from .registry import REQUIRED, Kind, OpDef, Param, all_ops, register

__all__ = ["uniform01", "SAMPLERS", "OPS", "SEED_BOUND", "register_sampler", "distributions",
           "front_signature", "front_arguments", "example_arguments", "op_params"]

_BLOCK = 1024   # counters per element
SEED_BOUND = 2 ** 31 - 1
"""Each sampler kernel call takes one seed in ``[0, SEED_BOUND)`` (numba's
``np.random.randint(0, SEED_BOUND)``, drawn in the CPU kernel or on the host before a launch)."""


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


_POS = (lambda v: v > 0, "> 0")
_NONNEG = (lambda v: v >= 0, ">= 0")
_PROB = (lambda v: 0 <= v <= 1, "in [0, 1]")

# name -> (sampler, params (name, default, doc[, (check, what it wants)]), default dtype, doc)
SAMPLERS = {
    "uniform": (sample_uniform, (("low", 0.0, "lower bound"), ("high", 1.0, "upper bound (excluded)")),
                "float32", "uniform on [low, high)"),
    "normal": (sample_normal, (("loc", 0.0, "mean"), ("scale", 1.0, "standard deviation", _NONNEG)),
               "float32", "normal (Gaussian)"),
    "exponential": (sample_exponential, (("lam", 1.0, "rate (1 / mean)", _POS),), "float32", "exponential"),
    "gamma": (sample_gamma, (("alpha", 1.0, "shape", _POS), ("beta", 1.0, "scale", _POS)), "float32",
              "gamma"),
    "poisson": (sample_poisson, (("lam", 1.0, "mean", _NONNEG),), "float32", "Poisson"),
    "negative_binomial": (sample_negative_binomial,
                          (("k", 1, "successes", _NONNEG), ("p", 1.0, "success probability", _PROB)),
                          "float32", "negative binomial (failures before the k-th success)"),
    "generalized_negative_binomial": (sample_generalized_negative_binomial,
                                      (("mu", 1.0, "mean", _NONNEG), ("alpha", 1.0, "dispersion", _NONNEG)),
                                      "float32",
                                      "generalized negative binomial (variance mu + alpha * mu**2)"),
    "randint": (sample_randint, (("low", None, "lower bound"), ("high", None, "upper bound (excluded)")),
                "int32", "uniform integers in [low, high)"),
}

_ALIASES = {"uniform": ("random_uniform", "uniform"), "normal": ("random_normal", "normal")}


def _bounds(strict: bool):
    """The op check of uniform (low <= high) and randint (low < high)."""
    def check(p: dict) -> None:
        if p["low"] > p["high"] or (strict and p["low"] == p["high"]):
            raise ParamError(f"need low {'<' if strict else '<='} high, got low={p['low']}, high={p['high']}")
    return check


_CHECKS = {"uniform": _bounds(False), "randint": _bounds(True)}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _rate_of_scale(values: dict, where: str) -> dict:
    """``exponential``'s front end takes the mean (``scale``, a number, an NDArray or a Symbol),
    its op the rate."""
    scale = values["scale"]
    if _is_number(scale) and not scale > 0:
        raise ParamError(f"{where}: parameter 'scale': {scale!r} is invalid, expected > 0")
    return {"lam": 1.0 / scale}


# the front-end parameters (``mx.random.<dist>``, ``mx.sym.random.<dist>``) where they are not the
# op's own, and the function giving the op's params from them
_FRONT = {"exponential": ((("scale", 1.0),), _rate_of_scale)}


def _params(spec: tuple) -> tuple[Param, ...]:
    """The distribution's params: ints for randint's bounds (required) and k, floats otherwise."""
    out = []
    for name, default, doc, *check in spec:
        test, want = check[0] if check else (None, "")
        kind = "int" if default is None or name == "k" else "float"
        out.append(Param(name, kind, REQUIRED if default is None else default, check=test, check_msg=want,
                         doc=doc))
    return tuple(out)


def _shape(p: dict, ins: list, aux: list):
    """The output's shape is ``shape``; without one, what the graph around it says (MXNet's rule:
    ``mx.sym.random.normal() + x`` draws x's shape)."""
    return [], [tuple(p["shape"]) or None], []


def _dtype(p: dict, ins: list, aux: list):
    return [], [np.dtype(p["dtype"])], []


def _like_shape(p: dict, ins: list, aux: list):
    return [ins[0]], [ins[0]], []


def register_sampler(dist: str, sampler: Callable, spec: tuple, dtype: str, what: str,
                     like: bool = True) -> list[str]:
    """Register the records of one distribution: ``_random_<dist>`` (public as ``random_<dist>``)
    and, with ``like``, ``_random_<dist>_like``; ``sampler(seed, index, *params)`` gives an
    element, ``spec`` holds its params as in :data:`SAMPLERS`. Return the names registered. The
    ``random`` namespaces (:func:`distributions`) and the lowering (:mod:`symjit.lower.random`)
    take every such record.
    """
    common = (Param("shape", "shape", (), doc="the output shape"), Param("ctx", "str", "", doc="ignored"),
              Param("dtype", "dtype", dtype, doc="the output dtype"))
    own = tuple((n, d) for n, d, *_ in spec)
    front, to_op = _FRONT.get(dist, (own, None))
    info = {"family": "random", "no_grad": True, "sampler": sampler, "params": [n for n, *_ in spec],
            "dist": dist}
    register(OpDef(
        name=f"_random_{dist}", aliases=_ALIASES.get(dist, (f"random_{dist}",)), arguments=(),
        params=_params(spec) + common, check=_CHECKS.get(dist), shape=_shape, dtype=_dtype,
        kind=Kind.INJECTIVE, doc=f"Samples of ``shape`` from the {what} distribution.",
        extra={**info, "front": front, "to_op": to_op},
    ))
    if not like:
        return [f"_random_{dist}"]
    register(OpDef(
        name=f"_random_{dist}_like", params=_params(spec), check=_CHECKS.get(dist), shape=_like_shape,
        kind=Kind.INJECTIVE,
        doc=f"Samples from the {what} distribution, shaped like data (which lends only its shape and dtype).",
        extra={**info, "front": own, "to_op": None},
    ))
    return [f"_random_{dist}", f"_random_{dist}_like"]


OPS: list[str] = []
for _dist, (_fn, _spec, _dtype_name, _what) in SAMPLERS.items():
    OPS += register_sampler(_dist, _fn, _spec, _dtype_name, _what, like=_dist != "randint")
del _dist, _fn, _spec, _dtype_name, _what


# --- the front ends' table -----------------------------------------------------------------------
def distributions() -> dict[str, OpDef]:
    """The functions of the ``random`` namespaces (``mx.random``, ``mx.nd.random``,
    ``mx.sym.random``), by name, each with its sampler record: every record of the ``random``
    family, ``_random_<name>``. The namespaces are made from this, so a new record is a new
    function of each of them.

    >>> sorted(distributions())[:3]
    ['exponential', 'exponential_like', 'gamma']
    """
    return {name[len("_random_"):]: op for name, op in all_ops().items()
            if op.extra.get("family") == "random" and name.startswith("_random_")}


def front_signature(op: OpDef, keywords: Sequence[str], own: bool = False) -> inspect.Signature:
    """The signature of ``op``'s front-end function: ``data`` first for a ``*_like`` op, the
    distribution's parameters with their defaults (the op's own with ``own``), then ``keywords``
    (default None) and ``**kwargs``.

    >>> str(front_signature(all_ops()['_random_exponential'], ('shape', 'dtype')))
    '(scale=1.0, shape=None, dtype=None, **kwargs)'
    >>> str(front_signature(all_ops()['_random_exponential'], ('shape',), own=True))
    '(lam=1.0, shape=None, **kwargs)'
    """
    P = inspect.Parameter
    spec = [(n, op.param(n).default) for n in op.extra["params"]] if own else op.extra["front"]
    params = [P("data", P.POSITIONAL_OR_KEYWORD)] if op.name.endswith("_like") else []
    params += [P(n, P.POSITIONAL_OR_KEYWORD, default=P.empty if d is None or d is REQUIRED else d)
               for n, d in spec]
    params += [P(n, P.POSITIONAL_OR_KEYWORD, default=None) for n in keywords]
    return inspect.Signature([*params, P("kwargs", P.VAR_KEYWORD)])


def front_arguments(sig: inspect.Signature, args: tuple, kwargs: dict, where: str) -> dict[str, Any]:
    """The arguments of a front-end call bound to their names (defaults filled in, the unknown
    keywords under ``kwargs``); a clear error naming ``where`` when they do not fit.

    >>> sig = front_signature(all_ops()['_random_uniform'], ('shape',))
    >>> front_arguments(sig, (-1,), {'shape': 3}, 'random.uniform')
    {'low': -1, 'high': 1.0, 'shape': 3, 'kwargs': {}}
    """
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise ParamError(f"{where}: {exc}; it takes {sig}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def example_arguments(sig: inspect.Signature) -> str:
    """Source of example values for the required distribution parameters of a front-end
    signature (0, 1, ...: randint's bounds), each followed by a comma: doctests of the
    generated functions.

    >>> example_arguments(front_signature(all_ops()['_random_randint'], ('shape',)))
    '0, 1, '
    """
    required = [p for p in sig.parameters.values() if p.default is inspect.Parameter.empty
                and p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "data"]
    return "".join(f"{i}, " for i in range(len(required)))


def op_params(op: OpDef, values: dict[str, Any], where: str) -> dict[str, Any]:
    """The op's distribution parameters from the front end's (``exponential``'s rate from its
    mean); the values may be numbers, NDArrays or Symbols; errors name ``where``.

    >>> op_params(all_ops()['_random_exponential'], {'scale': 4.0}, 'random.exponential')
    {'lam': 0.25}
    """
    to_op = op.extra.get("to_op")
    return to_op(values, where) if to_op is not None else dict(values)
