"""Elementwise operators: unary math, same-shape binary ops, binary ops with a scalar, and
clip, smooth_l1, zeros_like, ones_like, where, Cast.

Every op carries a scalar ``body`` (see :class:`~symjit.ops.registry.OpDef`): a plain module-level
function of scalars written once here and wrapped by the compiler for ``numba.njit`` and
``numba.cuda.jit(device=True)``. The bodies use only arithmetic, comparisons, conditional
expressions and ``math`` functions numba supports; they assume IEEE semantics for a zero divisor
(compile with ``error_model='numpy'``; CUDA always behaves so).

Conventions kept from MXNet 1.x: comparisons return 1.0/0.0 in the input dtype; ``_mod`` takes the
sign of the divisor (Python's ``%``) and ``x mod 0`` is 0; ``round`` rounds halves away from zero;
``relu`` maps NaN to 0; ``maximum``/``minimum`` propagate NaN (as numpy does).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .registry import Kind, OpDef, Param, RuleError, register, same_shape
from .rules import shape_str

__all__ = ["fixed_body", "const_body", "UNARY", "BINARY", "SCALAR", "BINARY_FNS", "OPS"]

_EXACT = 4503599627370496.0  # 2**52: every float at least this large is an integer

# ---------------------------------------------------------------------------------------------
# Scalar bodies: unary.


def _identity(x):
    return x


def _negative(x):
    return -x


def _abs(x):
    return abs(x)


def _sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else x)


def _square(x):
    return x * x


def _sqrt(x):
    return math.sqrt(x)


def _rsqrt(x):
    return 1.0 / math.sqrt(x)


def _cbrt(x):
    y = math.copysign(math.pow(abs(x), 1.0 / 3.0), x)
    return (2.0 * y + x / (y * y)) / 3.0 if (y != 0.0 and abs(y) < math.inf) else y


def _reciprocal(x):
    return 1.0 / x


def _exp(x):
    return math.exp(x)


def _expm1(x):
    return math.expm1(x)


def _log(x):
    return math.log(x)


def _log1p(x):
    return math.log1p(x)


def _log2(x):
    return math.log2(x)


def _log10(x):
    return math.log10(x)


def _relu(x):
    return x if x > 0 else 0.0


def _sigmoid(x):
    e = math.exp(-abs(x))
    return 1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e)


def _tanh(x):
    return math.tanh(x)


def _softsign(x):
    return x / (1.0 + abs(x))


def _erf(x):
    return math.erf(x)


def _cos(x):
    return math.cos(x)


def _sin(x):
    return math.sin(x)


def _floor(x):
    return x if not abs(x) < _EXACT else float(math.floor(x))


def _ceil(x):
    return x if not abs(x) < _EXACT else float(math.ceil(x))


def _round(x):
    a = abs(x)
    if not a < _EXACT:
        return x
    t = float(math.floor(a))
    return math.copysign(t + 1.0 if a - t >= 0.5 else t, x)


def _zero(x):
    return 0.0


def _one(x):
    return 1.0


# ---------------------------------------------------------------------------------------------
# Scalar bodies: binary (the broadcast_* ops share them), and the reversed scalar forms.


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


def _div(a, b):
    return a / b


def _mod(a, b):
    return 0.0 if b == 0 else a % b


def _power(a, b):
    return math.pow(a, b)


def _maximum(a, b):
    return a if (a > b or a != a) else b


def _minimum(a, b):
    return a if (a < b or a != a) else b


def _hypot(a, b):
    return math.hypot(a, b)


def _equal(a, b):
    return 1.0 if a == b else 0.0


def _not_equal(a, b):
    return 1.0 if a != b else 0.0


def _greater(a, b):
    return 1.0 if a > b else 0.0


def _greater_equal(a, b):
    return 1.0 if a >= b else 0.0


def _lesser(a, b):
    return 1.0 if a < b else 0.0


def _lesser_equal(a, b):
    return 1.0 if a <= b else 0.0


def _rsub(x, s):
    return s - x


def _rdiv(x, s):
    return s / x


def _rmod(x, s):
    return 0.0 if x == 0 else s % x


def _rpower(x, s):
    return math.pow(s, x)


def _clip(x, a_min, a_max):
    y = a_max if x > a_max else x
    return a_min if y < a_min else y


def _smooth_l1(x, sigma):
    s2 = sigma * sigma
    return 0.5 * s2 * x * x if abs(x) < 1.0 / s2 else abs(x) - 0.5 / s2


def _where(c, x, y):
    return x if c != 0 else y


# ---------------------------------------------------------------------------------------------
# Body slots: body(params) -> (fn, consts).


def fixed_body(fn: Callable) -> Callable[[dict], tuple]:
    """The ``body`` slot of an op whose scalar function takes no constants.

    >>> fixed_body(_add)({})[0](2.0, 3.0), fixed_body(_add)({})[1]
    (5.0, ())
    """
    def body(p: dict) -> tuple:
        return fn, ()
    body.fn = fn  # type: ignore[attr-defined]
    return body


def const_body(fn: Callable, *names: str) -> Callable[[dict], tuple]:
    """The ``body`` slot of an op whose scalar function takes the params ``names`` as constants.

    >>> fn, consts = const_body(_rsub, 'scalar')({'scalar': 1.0})
    >>> consts, fn(3.0, *consts)
    ((1.0,), -2.0)
    """
    def body(p: dict) -> tuple:
        return fn, tuple(float(p[n]) for n in names)
    body.fn = fn  # type: ignore[attr-defined]
    return body


def _unary_shape(p: dict, ins: list, aux: list):
    return [ins[0]], [ins[0]], []


# ---------------------------------------------------------------------------------------------
# Unary ops: (name, fn, aliases, formula).

UNARY: tuple[tuple[str, Callable, tuple[str, ...], str], ...] = (
    ("exp", _exp, (), "exp(x)"),
    ("expm1", _expm1, (), "exp(x) - 1, accurate for small x"),
    ("log", _log, (), "natural logarithm ln(x)"),
    ("log1p", _log1p, (), "ln(1 + x), accurate for small x"),
    ("log2", _log2, (), "base-2 logarithm"),
    ("log10", _log10, (), "base-10 logarithm"),
    ("sqrt", _sqrt, (), "square root"),
    ("rsqrt", _rsqrt, (), "1 / sqrt(x)"),
    ("cbrt", _cbrt, (), "cube root (negative for negative x)"),
    ("square", _square, (), "x * x"),
    ("reciprocal", _reciprocal, (), "1 / x"),
    ("abs", _abs, (), "|x|"),
    ("sign", _sign, (), "-1, 0 or 1 by the sign of x"),
    ("negative", _negative, (), "-x"),
    ("relu", _relu, (), "max(x, 0)"),
    ("sigmoid", _sigmoid, (), "1 / (1 + exp(-x)), computed stably for large |x|"),
    ("tanh", _tanh, (), "hyperbolic tangent"),
    ("softsign", _softsign, (), "x / (1 + |x|)"),
    ("erf", _erf, (), "the Gauss error function"),
    ("cos", _cos, (), "cosine"),
    ("sin", _sin, (), "sine"),
    ("floor", _floor, (), "the largest integer <= x"),
    ("ceil", _ceil, (), "the smallest integer >= x"),
    ("round", _round, (), "the nearest integer, halves rounded away from zero"),
    ("_copy", _identity, ("identity",), "a copy of x"),
    ("zeros_like", _zero, (), "an array of zeros shaped like x"),
    ("ones_like", _one, (), "an array of ones shaped like x"),
)

for _name, _fn, _aliases, _formula in UNARY:
    register(OpDef(
        name=_name, shape=_unary_shape, kind=Kind.ELEMWISE, inplace=((0, 0),), aliases=_aliases,
        body=fixed_body(_fn), doc=f"Elementwise {_formula}.", extra={"family": "elementwise"},
    ))

# ---------------------------------------------------------------------------------------------
# Same-shape binary ops: (name, fn, aliases, formula).

BINARY: tuple[tuple[str, Callable, tuple[str, ...], str], ...] = (
    ("elemwise_add", _add, ("_Plus", "_plus", "_add"), "lhs + rhs"),
    ("elemwise_sub", _sub, ("_Minus", "_minus", "_sub"), "lhs - rhs"),
    ("elemwise_mul", _mul, ("_Mul", "_mul"), "lhs * rhs"),
    ("elemwise_div", _div, ("_Div", "_div"), "lhs / rhs"),
    ("_mod", _mod, ("_Mod",), "lhs mod rhs (sign of rhs; 0 where rhs is 0)"),
    ("_power", _power, ("_Power",), "lhs ** rhs"),
    ("_maximum", _maximum, ("_Maximum",), "max(lhs, rhs)"),
    ("_minimum", _minimum, ("_Minimum",), "min(lhs, rhs)"),
    ("_hypot", _hypot, (), "sqrt(lhs**2 + rhs**2)"),
    ("_equal", _equal, (), "1 where lhs == rhs else 0"),
    ("_not_equal", _not_equal, (), "1 where lhs != rhs else 0"),
    ("_greater", _greater, (), "1 where lhs > rhs else 0"),
    ("_greater_equal", _greater_equal, (), "1 where lhs >= rhs else 0"),
    ("_lesser", _lesser, (), "1 where lhs < rhs else 0"),
    ("_lesser_equal", _lesser_equal, (), "1 where lhs <= rhs else 0"),
)

#: canonical same-shape op name -> its scalar function (the broadcast_* ops reuse them)
BINARY_FNS: dict[str, Callable] = {name: fn for name, fn, _, _ in BINARY}

for _name, _fn, _aliases, _formula in BINARY:
    register(OpDef(
        name=_name, arguments=("lhs", "rhs"), shape=same_shape, kind=Kind.ELEMWISE,
        inplace=((0, 0),), aliases=_aliases, body=fixed_body(_fn),
        doc=f"Elementwise {_formula}; both inputs have one shape and one dtype.",
        extra={"family": "elementwise"},
    ))

# ---------------------------------------------------------------------------------------------
# Binary ops with a scalar: (name, fn(x, scalar), aliases, formula).

SCALAR: tuple[tuple[str, Callable, tuple[str, ...], str], ...] = (
    ("_plus_scalar", _add, ("_PlusScalar",), "data + scalar"),
    ("_minus_scalar", _sub, ("_MinusScalar",), "data - scalar"),
    ("_rminus_scalar", _rsub, ("_RMinusScalar",), "scalar - data"),
    ("_mul_scalar", _mul, ("_MulScalar",), "data * scalar"),
    ("_div_scalar", _div, ("_DivScalar",), "data / scalar"),
    ("_rdiv_scalar", _rdiv, ("_RDivScalar",), "scalar / data"),
    ("_mod_scalar", _mod, ("_ModScalar",), "data mod scalar"),
    ("_rmod_scalar", _rmod, ("_RModScalar",), "scalar mod data"),
    ("_power_scalar", _power, ("_PowerScalar",), "data ** scalar"),
    ("_rpower_scalar", _rpower, ("_RPowerScalar",), "scalar ** data"),
    ("_maximum_scalar", _maximum, ("_MaximumScalar",), "max(data, scalar)"),
    ("_minimum_scalar", _minimum, ("_MinimumScalar",), "min(data, scalar)"),
    ("_hypot_scalar", _hypot, ("_HypotScalar",), "sqrt(data**2 + scalar**2)"),
    ("_equal_scalar", _equal, ("_EqualScalar",), "1 where data == scalar else 0"),
    ("_not_equal_scalar", _not_equal, ("_NotEqualScalar",), "1 where data != scalar else 0"),
    ("_greater_scalar", _greater, ("_GreaterScalar",), "1 where data > scalar else 0"),
    ("_greater_equal_scalar", _greater_equal, ("_GreaterEqualScalar",), "1 where data >= scalar else 0"),
    ("_lesser_scalar", _lesser, ("_LesserScalar",), "1 where data < scalar else 0"),
    ("_lesser_equal_scalar", _lesser_equal, ("_LesserEqualScalar",), "1 where data <= scalar else 0"),
)

for _name, _fn, _aliases, _formula in SCALAR:
    register(OpDef(
        name=_name, params=(Param("scalar", "float", doc="the scalar operand"),),
        shape=_unary_shape, kind=Kind.ELEMWISE, inplace=((0, 0),), aliases=_aliases,
        body=const_body(_fn, "scalar"), doc=f"Elementwise {_formula}.", extra={"family": "elementwise"},
    ))

del _name, _fn, _aliases, _formula

# ---------------------------------------------------------------------------------------------
# clip, where, Cast.

register(OpDef(
    name="clip",
    params=(Param("a_min", "float", doc="minimum value"), Param("a_max", "float", doc="maximum value")),
    shape=_unary_shape, kind=Kind.ELEMWISE, inplace=((0, 0),), body=const_body(_clip, "a_min", "a_max"),
    doc="Clips values elementwise: ``max(min(x, a_max), a_min)`` (as MXNet, a_min wins when a_min > a_max).",
    extra={"family": "elementwise"},
))

register(OpDef(
    name="smooth_l1",
    params=(Param("scalar", "float", check=lambda v: v > 0, check_msg="> 0", doc="sigma"),),
    shape=_unary_shape, kind=Kind.ELEMWISE, inplace=((0, 0),), body=const_body(_smooth_l1, "scalar"),
    doc=("Smooth L1 loss elementwise, with sigma = ``scalar``: ``0.5 * (sigma * x)**2`` where "
         "``|x| < 1 / sigma**2``, else ``|x| - 0.5 / sigma**2``."),
    extra={"family": "elementwise"},
))


def _where_shape(p: dict, ins: list, aux: list):
    cond, x, y = ins
    data = x if x is not None else y
    if data is None:
        return [cond, None, None], [None], []
    if cond is None:
        cond = data
    elif cond != data and not (len(cond) == 1 and len(data) >= 1 and cond[0] == data[0]):
        raise RuleError(f"argument 'condition' must have the shape of 'x' {shape_str(data)} or be 1-D of "
                        f"length {data[0] if data else '?'} (x's first axis), got {shape_str(cond)}")
    return [cond, data, data], [data], []


def _where_dtype(p: dict, ins: list, aux: list):
    cond, x, y = ins
    data = x if x is not None else y
    return [data if cond is None else cond, data, data], [data], []


register(OpDef(
    name="where", arguments=("condition", "x", "y"), shape=_where_shape, dtype=_where_dtype,
    kind=Kind.BROADCAST, inplace=((1, 0),), body=fixed_body(_where),
    doc=("Picks ``x`` where ``condition`` is non-zero, else ``y``. ``x`` and ``y`` share shape and "
         "dtype; ``condition`` has x's shape, or is 1-D of length ``x.shape[0]`` and then picks whole "
         "rows (it indexes the output's first axis, not numpy's last); its dtype may differ."),
    extra={"family": "elementwise", "broadcast": "condition 1-D indexes axis 0"},
))


def _cast_dtype(p: dict, ins: list, aux: list):
    return [ins[0]], [np.dtype(p["dtype"])], []


register(OpDef(
    name="Cast", aliases=("cast",), params=(Param("dtype", "dtype", doc="output dtype"),),
    shape=_unary_shape, dtype=_cast_dtype, kind=Kind.ELEMWISE, body=fixed_body(_identity),
    doc="Casts to ``dtype`` elementwise (float to integer truncates toward zero, as C casts do).",
    extra={"family": "elementwise"},
))

OPS: tuple[str, ...] = tuple(
    [n for n, *_ in UNARY] + [n for n, *_ in BINARY] + [n for n, *_ in SCALAR]
    + ["clip", "smooth_l1", "where", "Cast"]
)
