"""Vectorizable ``tanh`` and ``sigmoid`` for float32 elementwise bodies.

Numba compiles ``math.tanh``/``math.exp`` on float32 to calls of libm's ``tanhf``/``expf``, which
LLVM cannot vectorize: a float32 tanh loop over 737k elements takes ~11 ms where numpy's SIMD
``np.tanh`` takes 0.3 ms. :func:`tanh` and :func:`sigmoid` are plain Python functions (usable from
Python, from ``numba.njit`` and from ``numba.cuda.jit(device=True)`` bodies) that numba replaces
at typing time, per target and argument type (``numba.extending.overload``, :func:`typer`):

* on every target, ``math.tanh`` / ``math.exp`` (the generic overloads registered here);
* on a target that registers the vectorizable forms for itself (the CPU's,
  :mod:`symjit.lower.cpu.overloads`; numba prefers a target's own overload to the generic one),
  a float32 argument takes a branch-free, call-free formula (only arithmetic, selects and
  conversions, so LLVM vectorizes the loop around it), evaluated in float64 and rounded once to
  float32, so the result is within about half an ulp of the exact value (see the tests); any
  other type (float64 above all: finite-difference gradient checks need full accuracy) keeps
  ``math.tanh`` / ``math.exp``.

tanh (float32): clamp to ``[-TANH_CLAMP, TANH_CLAMP]`` (beyond 9.0109 tanh rounds to +-1 in float32),
then ``x * P(x*x) / Q(x*x)`` with ``P`` of degree 5, ``Q`` of degree 4 and ``P(0) = Q(0) = 1``, so
tiny and subnormal inputs give ``x`` exactly and ``tanh(-0.0) == -0.0``; NaN stays NaN (both clamp
comparisons are false). The rational's relative error on ``[0, 9.1]`` is 1.5e-9 (0.025 float32
half-ulps). The coefficients come from :func:`fit_tanh` (Loeb's linearised least squares on the
relative error, with Lawson's reweighting towards minimax), reproducible with::

    python -c "from symjit.ops.fastmath import fit_tanh; print(fit_tanh())"

sigmoid (float32): ``e = exp(-|x|)`` in float64 as ``2**n * exp(r)`` (``n`` the nearest integer to
``-|x|/ln 2``, ``|r| <= ln(2)/2``, ``exp(r)`` by its degree-8 Taylor polynomial, relative error
< 3e-10; ``2**n`` built from its bits), then ``1/(1+e)`` for ``x >= 0`` and ``e/(1+e)`` otherwise,
rounded once to float32: accurate in relative terms also for large negative ``x``, subnormal
results included (``|x|`` is clamped to 104, where the float32 result is 0). NaN stays NaN.

>>> import numba, numpy as np
>>> from symjit.jitext import install
>>> install()       # symjit registers its numba extensions before it compiles; here by hand
>>> f = numba.njit(lambda v: tanh(v))
>>> float(f(np.float32(0.5))) == float(np.float32(np.tanh(0.5)))
True
>>> tanh(0.5) == math.tanh(0.5)    # plain Python: math.tanh
True
"""
from __future__ import annotations

import math

import numpy as np

from ..jitext import jitable, on_install

__all__ = ["tanh", "sigmoid", "fit_tanh", "typer", "JIT", "TANH_CLAMP", "TANH_P", "TANH_Q"]

TANH_CLAMP = 9.1
# fit_tanh(5, 4, 9.1): tanh(x) ~ x * P(s) / Q(s), s = x*x, coefficients of s**0, s**1, ...
TANH_P = (1.0, 0.13677758142985272, 0.003865595535025713, 2.7950581401538067e-05,
          3.044143419718932e-08, -1.2091053470800228e-11)
TANH_Q = (1.0, 0.47011090551039175, 0.027235915240774983, 0.00039337512741978166,
          1.2833009352807304e-06)

_P0, _P1, _P2, _P3, _P4, _P5 = TANH_P
_Q0, _Q1, _Q2, _Q3, _Q4 = TANH_Q
_C = TANH_CLAMP

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_EXP_ARG_MAX = 104.0    # sigmoid(-104) < 2**-150: 0 in float32; 2**-151 is a normal float64
_JIT = {"error_model": "numpy"}
JIT = _JIT   # the jit options of the float32 formulas' overloads


def tanh(x: float) -> float:
    """Hyperbolic tangent; compiled for a float32 argument on the CPU, it is the fast formula."""
    return math.tanh(x)


def sigmoid(x: float) -> float:
    """``1 / (1 + exp(-x))`` without overflow; compiled for float32 on the CPU, the fast formula."""
    return _sigmoid_libm(x)


def _sigmoid_libm(x):
    e = math.exp(-abs(x))
    return 1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e)


def fit_tanh(m: int = 5, n: int = 4, c: float = TANH_CLAMP, iters: int = 60,
             npts: int = 20000) -> tuple[np.ndarray, np.ndarray, float]:
    """Fit ``tanh(x) ~ x * P(s) / Q(s)``, ``s = x*x``, ``deg P = m``, ``deg Q = n``,
    ``P(0) = Q(0) = 1``, minimising the max relative error on ``[0, c]`` (float64, numpy only).

    Loeb's linearisation: solve ``P(s) - f(s) Q(s) = 0`` (``f = tanh(x)/x``) by weighted least squares
    with weights ``sqrt(w) / (f * Q_previous)``, so the residual is the relative error; Lawson's update
    ``w *= |error|`` moves the solution towards minimax. Returns ``(P, Q, max relative error)``, the
    coefficients of ``s**0, s**1, ...``; :data:`TANH_P`, :data:`TANH_Q` are ``fit_tanh()``.
    """
    x = np.concatenate([np.linspace(1e-4, c, npts), c * (1 - np.cos(np.linspace(0, np.pi / 2, npts)))])
    x = np.unique(x[x > 0])
    f = np.tanh(x) / x
    u = x * x / (c * c)                               # s scaled to [0, 1] (conditioning)
    a_p = np.stack([u ** k for k in range(1, m + 1)], 1)
    a_q = np.stack([u ** k for k in range(1, n + 1)], 1)
    w, q = np.ones_like(x), np.ones_like(x)
    for _ in range(iters):
        wt = np.sqrt(w) / (f * q)
        a = np.concatenate([a_p, -f[:, None] * a_q], 1) * wt[:, None]
        coef = np.linalg.lstsq(a, (f - 1.0) * wt, rcond=None)[0]
        q = 1.0 + a_q @ coef[m:]
        err = np.abs((1.0 + a_p @ coef[:m]) / q / f - 1.0)
        w = w * err / np.mean(w * err)
    scale = (c * c) ** -np.arange(0, max(m, n) + 1)
    p_coef = np.concatenate([[1.0], coef[:m]]) * scale[:m + 1]
    q_coef = np.concatenate([[1.0], coef[m:]]) * scale[:n + 1]
    return p_coef, q_coef, float(err.max())


# ---------------------------------------------------------------------------------------------
# The float32 formulas (CPU).


def _f64_from_bits(bits):
    """Reinterpret an int64 as a float64 (an LLVM bitcast, which vectorizes); compiled code sees
    the intrinsic :func:`_register` puts in its place."""
    return float(np.int64(bits).view(np.float64))


@jitable(**_JIT)
def _tanh_f32(x):
    xd = np.float64(x)
    xc = _C if xd > _C else (-_C if xd < -_C else xd)    # NaN passes through
    s = xc * xc
    p = ((((_P5 * s + _P4) * s + _P3) * s + _P2) * s + _P1) * s + _P0
    q = (((_Q4 * s + _Q3) * s + _Q2) * s + _Q1) * s + _Q0
    return np.float32(xc * p / q)


@jitable(**_JIT)
def _exp_neg(a):
    """``exp(-a)`` for a float64 ``0 <= a <= _EXP_ARG_MAX`` (not NaN: it is converted to int)."""
    t = -a * _LOG2E
    n = np.int64(t - 0.5)                  # t <= 0: truncating t - 0.5 rounds t to nearest
    r = -a - np.float64(n) * _LN2          # |r| <= ln(2)/2 (+ rounding)
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (
        1.0 / 120 + r * (1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320))))))))
    return p * _f64_from_bits((n + 1023) << 52)


@jitable(**_JIT)
def _sigmoid_f32(x):
    xd = np.float64(x)
    a = -xd if xd < 0.0 else xd
    a = a if a < _EXP_ARG_MAX else _EXP_ARG_MAX    # NaN -> the clamp; NaN returned below
    e = _exp_neg(a)
    y = np.float32((1.0 if xd >= 0.0 else e) / (1.0 + e))
    return x if x != x else y


# ---------------------------------------------------------------------------------------------
# Per-type dispatch (registered with numba at ``symjit.jitext.install``): the generic overloads
# here, a target's own (the vectorizable float32 forms) by the target (Target.install).


def typer(fn, vectorized: bool):
    """The typing function of an overload of ``fn`` (:func:`tanh` or :func:`sigmoid`): for a
    float32 argument the vectorizable formula when ``vectorized``, else (and for any other type)
    libm's ``math.tanh`` / ``math.exp`` form."""
    f32 = {tanh: _tanh_f32, sigmoid: _sigmoid_f32}[fn]
    libm = {tanh: lambda x: math.tanh(x), sigmoid: _sigmoid_libm}[fn]

    def typed(x):
        from numba import types
        if vectorized and x == types.float32:
            return lambda x: f32(x)
        return libm
    return typed


@on_install
def _register() -> None:
    global _f64_from_bits
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def f64_from_bits(typingctx, bits):
        if bits != types.int64:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen

    _f64_from_bits = f64_from_bits
    overload(tanh)(typer(tanh, False))         # every target
    overload(sigmoid)(typer(sigmoid, False))
