"""More elementwise operators of MXNet 1.9.1: the trigonometric and hyperbolic family and their
inverses, ``degrees``/``radians``, the special functions ``gamma``, ``gammaln`` and ``erfinv``,
``rcbrt``, the roundings ``rint`` and ``fix``, ``logical_not``, ``hard_sigmoid`` and the
same-shape and broadcast logical ops (``broadcast_logical_and``/``or``/``xor``).

As in :mod:`symjit.ops.elementwise`, each op is one record with a scalar ``body`` written once
(wrapped by the compiler for ``numba.njit`` and ``numba.cuda.jit(device=True)``) and a gradient
built from an internal ``_backward_*`` op with its own scalar body. Helpers the bodies share
(:func:`digamma`, :func:`cbrt`) are plain functions marked :func:`symjit.jitext.jitable`, callable
from Python, from ``njit`` code and from CUDA device code alike.

Domains follow MXNet (numpy's conventions): outside an inverse's domain the result is NaN
(``arcsin(2)``), at a pole of ``gamma`` it is +-inf or NaN. ``rint`` rounds halves to even
(``rint(2.5) == 2``), ``fix`` rounds toward zero; they, ``logical_not`` and the logical ops pass
no gradient (MXNet's is zero almost everywhere).

>>> import numpy as np, symjit as mx
>>> x = mx.nd.array([0.5, 2.5, -1.5])
>>> mx.nd.rint(x).asnumpy().tolist(), mx.nd.fix(x).asnumpy().tolist()
([0.0, 2.0, -2.0], [0.0, 2.0, -1.0])
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ..jitext import jitable
from .broadcast import _binary_shape
from .elementwise import BINARY_FNS, _unary_shape, _with, const_body, fixed_body
from .elementwise_grad import SECOND
from .registry import Kind, OpDef, Param, register, same_shape

__all__ = ["digamma", "cbrt", "UNARY_MATH", "LOGICAL", "OPS"]

_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@jitable
def digamma(x):
    """The digamma function psi(x) = d ln(gamma(x)) / dx (reflection for x <= 0, the recurrence
    psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic series); NaN at the poles 0, -1, ...

    >>> round(digamma(1.0), 12)    # -Euler's constant
    -0.577215664902
    """
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    acc = 0.0
    if x < 0.0:   # psi(x) = psi(1 - x) - pi / tan(pi x)
        acc = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))))
    return acc + math.log(x) - 0.5 / x - series


@jitable
def cbrt(x):
    """The real cube root (negative for negative x), refined by one Newton step.

    >>> cbrt(-27.0)
    -3.0
    """
    y = math.copysign(math.pow(abs(x), 1.0 / 3.0), x)
    return (2.0 * y + x / (y * y)) / 3.0 if (y != 0.0 and abs(y) < math.inf) else y


# ---------------------------------------------------------------------------------------------
# Scalar bodies.

def _tan(x):
    return math.tan(x)


def _arcsin(x):
    return math.asin(x) if -1.0 <= x <= 1.0 else math.nan


def _arccos(x):
    return math.acos(x) if -1.0 <= x <= 1.0 else math.nan


def _arctan(x):
    return math.atan(x)


def _sinh(x):
    return math.sinh(x)


def _cosh(x):
    return math.cosh(x)


def _arcsinh(x):
    return math.asinh(x)


def _arccosh(x):
    return math.acosh(x) if x >= 1.0 else math.nan


def _arctanh(x):
    if x == 1.0 or x == -1.0:
        return math.copysign(math.inf, x)
    return math.atanh(x) if -1.0 < x < 1.0 else math.nan


def _degrees(x):
    return x * _DEG


def _radians(x):
    return x * _RAD


def _gamma(x):
    if x <= 0.0 and x == math.floor(x):   # a pole: numpy/MXNet give nan (inf at -0 and +0)
        return math.copysign(math.inf, x) if x == 0.0 else math.nan
    return math.gamma(x)


def _gammaln(x):
    if x <= 0.0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


def _erfinv(x):
    """Giles' single-precision approximation, then two Newton steps on erf(y) = x (double
    precision); +-inf at +-1, NaN outside [-1, 1]."""
    if x == 1.0 or x == -1.0:
        return math.copysign(math.inf, x)
    if not -1.0 < x < 1.0:
        return math.nan
    w = -math.log((1.0 - x) * (1.0 + x))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    y = p * x
    for _ in range(2):
        y -= (math.erf(y) - x) / (_TWO_OVER_SQRT_PI * math.exp(-y * y))
    return y


def _rcbrt(x):
    return 1.0 / cbrt(x)


def _rint(x):
    f = math.floor(x)
    d = x - f
    if d > 0.5:
        return f + 1.0
    if d < 0.5:
        return f
    return f if f == 2.0 * math.floor(0.5 * f) else f + 1.0


def _fix(x):
    return float(math.trunc(x)) if abs(x) < 4503599627370496.0 else x


def _logical_not(x):
    return 1.0 if x == 0 else 0.0


def _isnan(x):
    return 1.0 if x != x else 0.0


def _isinf(x):
    return 1.0 if (x == math.inf or x == -math.inf) else 0.0


def _isfinite(x):
    return 1.0 if (x == x and x != math.inf and x != -math.inf) else 0.0


def _hard_sigmoid(x, alpha, beta):
    y = alpha * x + beta
    return 1.0 if y > 1.0 else (0.0 if y < 0.0 else y)


def _logical_and(a, b):
    return 1.0 if (a != 0 and b != 0) else 0.0


def _logical_or(a, b):
    return 1.0 if (a != 0 or b != 0) else 0.0


def _logical_xor(a, b):
    return 1.0 if ((a != 0) != (b != 0)) else 0.0


# ---------------------------------------------------------------------------------------------
# Backward bodies: (ograd, data) or (ograd, output).

def _bw_tan(g, y):
    return g * (1.0 + y * y)


def _bw_arcsin(g, x):
    return g / math.sqrt(1.0 - x * x)


def _bw_arccos(g, x):
    return -g / math.sqrt(1.0 - x * x)


def _bw_arctan(g, x):
    return g / (1.0 + x * x)


def _bw_sinh(g, x):
    return g * math.cosh(x)


def _bw_cosh(g, x):
    return g * math.sinh(x)


def _bw_arcsinh(g, x):
    return g / math.sqrt(x * x + 1.0)


def _bw_arccosh(g, x):
    return g / math.sqrt(x * x - 1.0)


def _bw_arctanh(g, x):
    return g / (1.0 - x * x)


def _bw_gamma(g, x):
    return g * math.gamma(x) * digamma(x)


def _bw_gammaln(g, x):
    return g * digamma(x)


def _bw_erfinv(g, y):
    return g * _HALF_SQRT_PI * math.exp(y * y)


def _bw_rcbrt(g, y):
    y2 = y * y
    return g * (-1.0 / 3.0) * y2 * y2


def _bw_hard_sigmoid(g, x, alpha, beta):
    y = alpha * x + beta
    return g * alpha if (y > 0.0 and y < 1.0) else 0.0


# ---------------------------------------------------------------------------------------------
# Records.

def _scaled_grad(factor: float) -> Callable:
    def grad(b, node, ograds):
        return [b.add1("_mul_scalar", ograds[0], scalar=factor)]
    return grad


# (name, body, gradient: "x"/"y" for a _backward_<name>(ograd, data/output) op, a rule, or None)
UNARY_MATH: tuple[tuple[str, Callable, object, str], ...] = (
    ("tan", _tan, "y", "tangent"),
    ("arcsin", _arcsin, "x", "inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1])"),
    ("arccos", _arccos, "x", "inverse cosine, in [0, pi] (NaN outside [-1, 1])"),
    ("arctan", _arctan, "x", "inverse tangent, in (-pi/2, pi/2)"),
    ("sinh", _sinh, "x", "hyperbolic sine"),
    ("cosh", _cosh, "x", "hyperbolic cosine"),
    ("arcsinh", _arcsinh, "x", "inverse hyperbolic sine"),
    ("arccosh", _arccosh, "x", "inverse hyperbolic cosine (NaN below 1)"),
    ("arctanh", _arctanh, "x", "inverse hyperbolic tangent (+-inf at +-1, NaN outside)"),
    ("degrees", _degrees, _scaled_grad(_DEG), "radians converted to degrees"),
    ("radians", _radians, _scaled_grad(_RAD), "degrees converted to radians"),
    ("gamma", _gamma, "x", "the gamma function"),
    ("gammaln", _gammaln, "x", "ln |gamma(x)|"),
    ("erfinv", _erfinv, "y", "the inverse error function (+-inf at +-1, NaN outside [-1, 1])"),
    ("rcbrt", _rcbrt, "y", "1 / cbrt(x)"),
    ("rint", _rint, None, "the nearest integer, halves to the even one"),
    ("fix", _fix, None, "x rounded toward zero"),
    ("logical_not", _logical_not, None, "1 where x == 0 else 0"),
    ("_contrib_isnan", _isnan, None, "1 where x is NaN else 0 (``mx.sym.contrib.isnan``)"),
    ("_contrib_isinf", _isinf, None, "1 where x is +-inf else 0 (``mx.sym.contrib.isinf``)"),
    ("_contrib_isfinite", _isfinite, None, "1 where x is neither NaN nor +-inf else 0 "
                                           "(``mx.sym.contrib.isfinite``)"),
)

for _name, _fn, _g, _formula in UNARY_MATH:
    if isinstance(_g, str):
        _grad = _with(f"_backward_{_name}", _g)
        register(OpDef(
            name=f"_backward_{_name}", arguments=("ograd", "output" if _g == "y" else "data"),
            shape=same_shape, kind=Kind.ELEMWISE, body=fixed_body(globals()[f"_bw_{_name}"]),
            grad=SECOND.get(f"_backward_{_name}"),
            doc=f"Internal: the gradient of {_name}.", extra={"backward_of": _name}))
    else:
        _grad = _g
    register(OpDef(
        name=_name, shape=_unary_shape, kind=Kind.ELEMWISE, body=fixed_body(_fn), grad=_grad,
        doc=f"Elementwise {_formula}.",
        extra={"family": "elementwise_math", **({} if _grad is not None else {"no_grad": True})},
    ))

register(OpDef(
    name="hard_sigmoid",
    params=(Param("alpha", "float", 0.2, doc="slope"), Param("beta", "float", 0.5, doc="offset")),
    shape=_unary_shape, kind=Kind.ELEMWISE, body=const_body(_hard_sigmoid, "alpha", "beta"),
    grad=_with("_backward_hard_sigmoid", "x", "alpha", "beta"),
    doc=("Elementwise ``max(0, min(1, alpha * x + beta))``; the gradient is ``alpha`` where "
         "``0 < alpha * x + beta < 1`` and 0 elsewhere."),
    extra={"family": "elementwise_math"},
))
register(OpDef(
    name="_backward_hard_sigmoid", arguments=("ograd", "data"),
    params=(Param("alpha", "float"), Param("beta", "float")), shape=same_shape, kind=Kind.ELEMWISE,
    body=const_body(_bw_hard_sigmoid, "alpha", "beta"), doc="Internal: the gradient of hard_sigmoid.",
    extra={"backward_of": "hard_sigmoid"},
))

# Logical ops: same-shape (internal, as MXNet's _logical_*) and broadcast (public).
LOGICAL: tuple[tuple[str, Callable, str], ...] = (
    ("_logical_and", _logical_and, "1 where both are non-zero else 0"),
    ("_logical_or", _logical_or, "1 where either is non-zero else 0"),
    ("_logical_xor", _logical_xor, "1 where exactly one is non-zero else 0"),
)
for _name, _fn, _formula in LOGICAL:
    BINARY_FNS[_name] = _fn
    register(OpDef(
        name=_name, arguments=("lhs", "rhs"), shape=same_shape, kind=Kind.ELEMWISE, body=fixed_body(_fn),
        doc=f"Elementwise {_formula}; both inputs have one shape and one dtype.",
        extra={"family": "elementwise_math", "no_grad": True},
    ))
    register(OpDef(
        name=f"broadcast{_name}", arguments=("lhs", "rhs"), shape=_binary_shape, kind=Kind.BROADCAST,
        body=fixed_body(_fn),
        doc=(f"Elementwise {_formula} with broadcasting (numpy's rule: shapes aligned at the last "
             "axis, axes of size 1 stretched); both inputs have one dtype."),
        extra={"family": "elementwise_math", "no_grad": True},
    ))

OPS: tuple[str, ...] = tuple([n for n, *_ in UNARY_MATH] + ["hard_sigmoid"]
                             + [n for n, *_ in LOGICAL] + [f"broadcast{n}" for n, *_ in LOGICAL])

del _name, _fn, _g, _formula, _grad
