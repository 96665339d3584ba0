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

Gradients (the ``grad`` slots) are graph nodes: one of these ops where one op does it
(d exp = dout * y), else an internal elementwise ``_backward_*`` op with its own scalar body,
registered at the end of this module (each fuses into the surrounding loop). Comparisons, sign,
floor, ceil, round, trunc, zeros_like and ones_like pass no gradient (MXNet's is zero almost everywhere).
``where`` is not fused: a 1-D condition indexes the output's first axis, which the right-aligned
broadcast loop of the code generator cannot express, so it has its own lowering.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import intdiv, partial_shape
from .elementwise_grad import SECOND
from .fastmath import sigmoid as fm_sigmoid
from .fastmath import tanh as fm_tanh
from .registry import Kind, OpDef, Param, RuleError, register, same_shape, unary_shape
from .rules import broadcast_shape, shape_str

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
    return fm_sigmoid(x)   # stable 1/(1+exp(-x)); vectorizable for float32 (see fastmath)


def _tanh(x):
    return fm_tanh(x)      # math.tanh; vectorizable for float32 (see fastmath)


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


def _trunc(x):
    a = abs(x)
    return x if not a < _EXACT else math.copysign(float(math.floor(a)), x)


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
    return intdiv.div(a, b)      # ints: 0 for a zero divisor (see symjit.ops.intdiv)


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
# Scalar bodies of the internal backward ops: (dout, source[, other][, consts]) -> dinput.

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _bw_expm1(g, y):
    return g * (y + 1.0)


def _bw_log(g, x):
    return g / x


def _bw_log1p(g, x):
    return g / (1.0 + x)


def _bw_log2(g, x):
    return g / (x * _LN2)


def _bw_log10(g, x):
    return g / (x * _LN10)


def _bw_sqrt(g, y):
    return 0.5 * g / y


def _bw_rsqrt(g, y):
    return -0.5 * g * y * y * y


def _bw_cbrt(g, y):
    return g / (3.0 * y * y)


def _bw_square(g, x):
    return 2.0 * g * x


def _bw_reciprocal(g, y):
    return -g * y * y


def _bw_abs(g, x):
    return g if x > 0 else (-g if x < 0 else 0.0)


def _bw_relu(g, y):
    return g if y > 0 else 0.0


def _bw_sigmoid(g, y):
    return g * y * (1.0 - y)


def _bw_tanh(g, y):
    return g * (1.0 - y * y)


def _bw_softsign(g, x):
    d = 1.0 + abs(x)
    return g / (d * d)


def _bw_erf(g, x):
    return g * _TWO_OVER_SQRT_PI * math.exp(-x * x)


def _bw_cos(g, x):
    return -g * math.sin(x)


def _bw_sin(g, x):
    return g * math.cos(x)


def _bw_div_rhs(g, a, b):
    return -g * a / (b * b)


def _bw_mod_lhs(g, a, b):   # integers: no gradient (MXNet's integer kernels)
    return 0.0 if b == 0 else intdiv.float_grad(a, g)


def _bw_mod_rhs(g, a, b):
    return 0.0 if b == 0 else intdiv.float_grad(a, -g * math.floor(a / b))


def _bw_power_lhs(g, a, b):
    return g * b * math.pow(a, b - 1.0)


def _bw_power_rhs(g, a, b):
    return g * math.pow(a, b) * math.log(a)


def _bw_maximum_lhs(g, a, b):
    return g if a >= b else 0.0


def _bw_maximum_rhs(g, a, b):
    return 0.0 if a >= b else g


def _bw_minimum_lhs(g, a, b):
    return g if a <= b else 0.0


def _bw_minimum_rhs(g, a, b):
    return 0.0 if a <= b else g


def _bw_hypot_lhs(g, a, b):
    h = math.hypot(a, b)
    return 0.0 if h == 0 else g * a / h


def _bw_hypot_rhs(g, a, b):
    h = math.hypot(a, b)
    return 0.0 if h == 0 else g * b / h


def _bw_rdiv_scalar(g, x, s):
    return -g * s / (x * x)


def _bw_mod_scalar(g, x, s):
    return 0.0 if s == 0 else intdiv.float_grad(x, g)


def _bw_rmod_scalar(g, x, s):
    return 0.0 if x == 0 else intdiv.float_grad(x, -g * math.floor(s / x))


def _bw_power_scalar(g, x, s):
    return g * s * math.pow(x, s - 1.0)


def _bw_rpower_scalar(g, y, s):
    return g * y * math.log(s)


def _bw_clip(g, x, a_min, a_max):
    return g if (x > a_min and x < a_max) else 0.0


def _bw_smooth_l1(g, x, sigma):
    s2 = sigma * sigma
    if abs(x) < 1.0 / s2:
        return g * s2 * x
    return g if x > 0 else (-g if x < 0 else 0.0)


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


_unary_shape = unary_shape


# ---------------------------------------------------------------------------------------------
# Gradient rules: grad(b, node, ograds) -> one value id (or None) per input.

_NO_GRAD = frozenset({"sign", "floor", "ceil", "round", "trunc", "zeros_like", "ones_like", "_equal",
                      "_not_equal",
                      "_greater", "_greater_equal", "_lesser", "_lesser_equal", "_equal_scalar",
                      "_not_equal_scalar", "_greater_scalar", "_greater_equal_scalar", "_lesser_scalar",
                      "_lesser_equal_scalar"})


def _extra(family: str, name: str) -> dict:
    return {"family": family, "no_grad": True} if name in _NO_GRAD else {"family": family}


def _pass_grad(b, node, ograds):
    """d(x + c) = dout: the head gradient itself."""
    return [ograds[0]]


def _neg_grad(b, node, ograds):
    return [b.add1("negative", ograds[0])]


def _with(op: str, src: str, *params: str) -> Callable:
    """A rule ``[op(dout, x or y, **params)]``: ``src`` 'x' reads the input, 'y' the output."""
    def grad(b, node, ograds):
        s = node.inputs[0] if src == "x" else node.outputs[0]
        return [b.add1(op, ograds[0], s, **{n: node.params[n] for n in params})]
    return grad


def _scaled(op: str) -> Callable:
    """``[op(dout, scalar)]`` (the gradient of x * s is dout * s, of x / s is dout / s)."""
    def grad(b, node, ograds):
        return [b.add1(op, ograds[0], scalar=node.params["scalar"])]
    return grad


_UNARY_GRADS: dict[str, Callable] = {
    "exp": _with("elemwise_mul", "y"), "negative": _neg_grad, "_copy": _pass_grad,
    **{n: _with(f"_backward_{n}", "y") for n in ("expm1", "sqrt", "rsqrt", "cbrt", "reciprocal", "relu",
                                                  "sigmoid", "tanh")},
    **{n: _with(f"_backward_{n}", "x") for n in ("log", "log1p", "log2", "log10", "square", "abs",
                                                  "softsign", "erf", "cos", "sin")},
}

_SCALAR_GRADS: dict[str, Callable] = {
    "_plus_scalar": _pass_grad, "_minus_scalar": _pass_grad, "_rminus_scalar": _neg_grad,
    "_mul_scalar": _scaled("_mul_scalar"), "_div_scalar": _scaled("_div_scalar"),
    "_rpower_scalar": _with("_backward_rpower_scalar", "y", "scalar"),
    **{n: _with(f"_backward{n}", "x", "scalar") for n in ("_rdiv_scalar", "_mod_scalar", "_rmod_scalar",
                                                          "_power_scalar", "_maximum_scalar",
                                                          "_minimum_scalar", "_hypot_scalar")},
}


# same-shape binary op -> (lhs rule, rhs rule); each rule(b, dout, lhs, rhs, mul, div) -> value id
_BINARY_GRADS: dict[str, tuple[Callable, Callable]] = {
    "elemwise_add": (lambda b, g, x, y, mul, div: g, lambda b, g, x, y, mul, div: g),
    "elemwise_sub": (lambda b, g, x, y, mul, div: g,
                     lambda b, g, x, y, mul, div: b.add1("negative", g)),
    "elemwise_mul": (lambda b, g, x, y, mul, div: b.add1(mul, g, y),
                     lambda b, g, x, y, mul, div: b.add1(mul, g, x)),
    "elemwise_div": (lambda b, g, x, y, mul, div: b.add1(div, g, y),
                     lambda b, g, x, y, mul, div: b.add1("_backward_div_rhs", g, x, y)),
}
for _op in ("_mod", "_power", "_maximum", "_minimum", "_hypot"):
    _BINARY_GRADS[_op] = tuple(
        (lambda name: lambda b, g, x, y, mul, div: b.add1(name, g, x, y))(f"_backward{_op}_{side}")
        for side in ("lhs", "rhs"))


def binary_grads(b, name: str, dout: int, lhs: int, rhs: int, broadcast: bool) -> list[int]:
    """The gradients of the binary op ``name`` (a same-shape op's name) wrt lhs and rhs, shaped
    like ``dout`` (the broadcast ops reduce them to each input's shape afterwards)."""
    mul, div = ("broadcast_mul", "broadcast_div") if broadcast else ("elemwise_mul", "elemwise_div")
    return [rule(b, dout, lhs, rhs, mul, div) for rule in _BINARY_GRADS[name]]


def _binary_grad(b, node, ograds):
    return binary_grads(b, node.op.name, ograds[0], node.inputs[0], node.inputs[1], False)


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
    ("trunc", _trunc, (), "x rounded toward zero"),
    ("_copy", _identity, ("identity",), "a copy of x"),
    ("zeros_like", _zero, (), "an array of zeros shaped like x"),
    ("ones_like", _one, (), "an array of ones shaped like x"),
)

for _name, _fn, _aliases, _formula in UNARY:
    register(OpDef(
        name=_name, shape=_unary_shape, kind=Kind.ELEMWISE, aliases=_aliases,
        body=fixed_body(_fn), grad=_UNARY_GRADS.get(_name), doc=f"Elementwise {_formula}.",
        extra=_extra("elementwise", _name),
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
        aliases=_aliases, body=fixed_body(_fn),
        grad=_binary_grad if _name in _BINARY_GRADS else None,
        doc=f"Elementwise {_formula}; both inputs have one shape and one dtype.",
        extra=_extra("elementwise", _name),
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
        shape=_unary_shape, kind=Kind.ELEMWISE, aliases=_aliases,
        body=const_body(_fn, "scalar"), grad=_SCALAR_GRADS.get(_name), doc=f"Elementwise {_formula}.",
        extra=_extra("elementwise", _name),
    ))

del _name, _fn, _aliases, _formula, _op

# ---------------------------------------------------------------------------------------------
# clip, where, Cast.

register(OpDef(
    name="clip",
    params=(Param("a_min", "float", doc="minimum value"), Param("a_max", "float", doc="maximum value")),
    shape=_unary_shape, kind=Kind.ELEMWISE, body=const_body(_clip, "a_min", "a_max"),
    grad=_with("_backward_clip", "x", "a_min", "a_max"),
    doc=("Clips values elementwise: ``max(min(x, a_max), a_min)`` (as MXNet, a_min wins when a_min > "
         "a_max). The gradient passes where ``a_min < x < a_max`` and is 0 elsewhere."),
    extra={"family": "elementwise"},
))

register(OpDef(
    name="smooth_l1",
    params=(Param("scalar", "float", 1.0, check=lambda v: v > 0, check_msg="> 0", doc="sigma"),),
    shape=_unary_shape, kind=Kind.ELEMWISE, body=const_body(_smooth_l1, "scalar"),
    grad=_with("_backward_smooth_l1", "x", "scalar"),
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


def _where_grad(b, node, ograds):
    """dout goes to x where the condition holds, else to y; none to the condition."""
    cond, g = node.inputs[0], ograds[0]
    zero = b.add1("zeros_like", g)
    return [None, b.add1("where", cond, g, zero), b.add1("where", cond, zero, g)]


register(OpDef(
    name="where", arguments=("condition", "x", "y"), shape=_where_shape, shape_partial=partial_shape.where,
    dtype=_where_dtype,
    kind=Kind.INJECTIVE, body=fixed_body(_where),
    grad=_where_grad,
    doc=("Picks ``x`` where ``condition`` is non-zero, else ``y``. ``x`` and ``y`` share shape and "
         "dtype; ``condition`` has x's shape, or is 1-D of length ``x.shape[0]`` and then picks whole "
         "rows (it indexes the output's first axis, not numpy's last); its dtype may differ. Not fused "
         "(its own kernel), since a 1-D condition is aligned at the first axis."),
    extra={"family": "elementwise", "broadcast": "condition 1-D indexes axis 0"},
))


def _cast_dtype(p: dict, ins: list, aux: list):
    return [ins[0]], [np.dtype(p["dtype"])], []


def _cast_grad(b, node, ograds):
    return [b.add1("Cast", ograds[0], dtype=b.g.values[node.inputs[0]].dtype.name)]


register(OpDef(
    name="Cast", aliases=("cast",), params=(Param("dtype", "dtype", doc="output dtype"),),
    shape=_unary_shape, dtype=_cast_dtype, kind=Kind.ELEMWISE, body=fixed_body(_identity),
    grad=_cast_grad,
    doc=("Casts to ``dtype`` elementwise (float to integer truncates toward zero, as C casts do). "
         "The gradient is the head gradient cast back to the input's dtype."),
    extra={"family": "elementwise"},
))

OPS: tuple[str, ...] = tuple(
    [n for n, *_ in UNARY] + [n for n, *_ in BINARY] + [n for n, *_ in SCALAR]
    + ["clip", "smooth_l1", "where", "Cast"]
)

# ---------------------------------------------------------------------------------------------
# Internal backward ops: elementwise, broadcasting their inputs against the head gradient (so the
# broadcast_* ops use them too). (name, scalar fn, arguments, constant params, backward_of).


def _bw_shape(p: dict, ins: list, aux: list):
    out = ins[0]
    for s in ins[1:]:
        out = broadcast_shape(out, s)
    return list(ins), [out], []


_BACKWARD: list[tuple[str, Callable, tuple[str, ...], tuple[str, ...], str]] = [
    *[(f"_backward_{n}", globals()[f"_bw_{n}"], ("ograd", "output"), (), n)
      for n in ("expm1", "sqrt", "rsqrt", "cbrt", "reciprocal", "relu", "sigmoid", "tanh")],
    *[(f"_backward_{n}", globals()[f"_bw_{n}"], ("ograd", "data"), (), n)
      for n in ("log", "log1p", "log2", "log10", "square", "abs", "softsign", "erf", "cos", "sin")],
    ("_backward_div_rhs", _bw_div_rhs, ("ograd", "lhs", "rhs"), (), "elemwise_div"),
    *[(f"_backward{n}_{side}", globals()[f"_bw{n}_{side}"], ("ograd", "lhs", "rhs"), (), n)
      for n in ("_mod", "_power", "_maximum", "_minimum", "_hypot") for side in ("lhs", "rhs")],
    ("_backward_rdiv_scalar", _bw_rdiv_scalar, ("ograd", "data"), ("scalar",), "_rdiv_scalar"),
    ("_backward_mod_scalar", _bw_mod_scalar, ("ograd", "data"), ("scalar",), "_mod_scalar"),
    ("_backward_rmod_scalar", _bw_rmod_scalar, ("ograd", "data"), ("scalar",), "_rmod_scalar"),
    ("_backward_power_scalar", _bw_power_scalar, ("ograd", "data"), ("scalar",), "_power_scalar"),
    ("_backward_rpower_scalar", _bw_rpower_scalar, ("ograd", "output"), ("scalar",), "_rpower_scalar"),
    ("_backward_maximum_scalar", _bw_maximum_lhs, ("ograd", "data"), ("scalar",), "_maximum_scalar"),
    ("_backward_minimum_scalar", _bw_minimum_lhs, ("ograd", "data"), ("scalar",), "_minimum_scalar"),
    ("_backward_hypot_scalar", _bw_hypot_lhs, ("ograd", "data"), ("scalar",), "_hypot_scalar"),
    ("_backward_clip", _bw_clip, ("ograd", "data"), ("a_min", "a_max"), "clip"),
    ("_backward_smooth_l1", _bw_smooth_l1, ("ograd", "data"), ("scalar",), "smooth_l1"),
]

for _name, _fn, _args, _consts, _of in _BACKWARD:
    register(OpDef(
        name=_name, arguments=_args, params=tuple(Param(c, "float") for c in _consts),
        shape=_bw_shape, kind=Kind.BROADCAST,
        body=const_body(_fn, *_consts) if _consts else fixed_body(_fn), grad=SECOND.get(_name),
        doc=f"Internal: a gradient of {_of} from ({', '.join(_args)}).",
        extra={"backward_of": _of},
    ))
del _name, _fn, _args, _consts, _of
