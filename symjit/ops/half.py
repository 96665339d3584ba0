"""float16 values inside a compiled program: ``_round_half``.

The kernels have no float16 type, so a float16 value a graph makes (``Cast`` to float16 of a float32
value, a float16 sampler or source op) is computed in float32 and rounded to the nearest float16
number by ``_round_half``, which the compiler inserts (``compiler/passes/half.py``); values computed
from float16 values stay float32 until the next rounding (symjit's choice: MXNet rounds after
every operator).

>>> [_round_half(x) for x in (1.0004, 1.0005, 65519.0, 65520.0, 1e-8, -2.5e-7)]
[1.0, 1.0009765625, 65504.0, inf, 0.0, -2.384185791015625e-07]
"""
from __future__ import annotations

import math

from .elementwise import fixed_body
from .registry import Kind, OpDef, register, unary_shape

__all__ = ["OPS"]

_HALF_MAX_ROUNDED = 65520.0        # the smallest magnitude float16 rounds to infinity
_HALF_MIN_NORMAL = 6.103515625e-05  # 2**-14; below it float16's spacing is 2**-24
_HALF_SUBNORMAL_STEP = 5.960464477539063e-08


def _round_half(x):
    """``x`` rounded to the nearest float16 number (ties to even), as a float of ``x``'s type."""
    a = abs(x)
    if a != a:
        return x
    if a >= _HALF_MAX_ROUNDED:
        return math.copysign(math.inf, x)
    if a < _HALF_MIN_NORMAL:
        q = _HALF_SUBNORMAL_STEP
    else:
        q = math.ldexp(1.0, math.frexp(a)[1] - 11)   # 11 significant bits in [2**(e-1), 2**e)
    y = a / q
    r = math.floor(y + 0.5)
    if r - y == 0.5 and r % 2.0 != 0.0:
        r -= 1.0
    return math.copysign(r * q, x)


def _pass_grad(b, node, ograds):
    """Rounding passes the head gradient through (as ``Cast``'s gradient does)."""
    return [ograds[0]]


register(OpDef(
    name="_round_half", shape=unary_shape, kind=Kind.ELEMWISE, body=fixed_body(_round_half),
    grad=_pass_grad,
    doc=("Rounds each element to the nearest float16 number (ties to even; beyond float16's range "
         "to infinity), keeping the input's float dtype: a float16 value computed in float32. "
         "The gradient passes the head gradient through."),
    extra={"family": "half"},
))

OPS: tuple[str, ...] = ("_round_half",)
