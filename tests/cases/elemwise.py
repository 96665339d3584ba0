"""Cases for the elementwise ops (symjit/ops/elementwise.py): unary math, same-shape binary ops,
ops with a scalar, clip, smooth_l1, where, Cast, and gradient accumulation when one variable feeds
both operands. References are numpy formulas written here; inputs stay away from the points where
an op is not differentiable (0 for abs/relu/cbrt, ties for maximum, jumps of mod and floor...)."""
from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(2024)
SHAPE = (3, 4)


def rnd(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape or SHAPE)


def away(*shape, lo=0.2, hi=1.5):
    """Values with |x| in [lo, hi] and random signs (away from 0)."""
    shape = shape or SHAPE
    return R.uniform(lo, hi, shape) * R.choice([-1.0, 1.0], shape)


def pos(*shape, lo=0.3, hi=2.0):
    return R.uniform(lo, hi, shape or SHAPE)


def off_grid(*shape, step=1.0):
    """Values at least 0.1 * step away from every multiple of ``step / 2`` (floor/ceil/round)."""
    shape = shape or SHAPE
    q = R.integers(-6, 6, shape)
    return (q + R.uniform(0.1, 0.4, shape)) * (step / 2)


def _erf(x):
    return np.vectorize(math.erf)(x)


def _round(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# name -> (numpy reference, input)
UNARY = {
    "exp": (np.exp, rnd()), "expm1": (np.expm1, rnd()), "log": (np.log, pos()),
    "log1p": (np.log1p, rnd(lo=-0.5, hi=2.0)), "log2": (np.log2, pos()), "log10": (np.log10, pos()),
    "sqrt": (np.sqrt, pos()), "rsqrt": (lambda x: 1.0 / np.sqrt(x), pos()), "cbrt": (np.cbrt, away()),
    "square": (np.square, rnd()), "reciprocal": (lambda x: 1.0 / x, away(lo=0.4)),
    "abs": (np.abs, away()), "negative": (np.negative, rnd()),
    "relu": (lambda x: np.maximum(x, 0.0), away(lo=0.05)),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), rnd(lo=-3, hi=3)), "tanh": (np.tanh, rnd(lo=-2, hi=2)),
    "softsign": (lambda x: x / (1.0 + np.abs(x)), away(lo=0.05, hi=3.0)), "erf": (_erf, rnd(lo=-2, hi=2)),
    "cos": (np.cos, rnd(lo=-3, hi=3)), "sin": (np.sin, rnd(lo=-3, hi=3)),
    "_copy": (lambda x: x.copy(), rnd()),
}
NO_GRAD_UNARY = {
    "sign": (np.sign, np.concatenate([away(2, 4), np.zeros((1, 4))])),
    "floor": (np.floor, off_grid()), "ceil": (np.ceil, off_grid()), "round": (_round, off_grid()),
    "trunc": (np.trunc, off_grid()),
    "zeros_like": (np.zeros_like, rnd()), "ones_like": (np.ones_like, rnd()),
}


def _unary(name, ref, x, grad="numeric", dtype=np.float64):
    return Case(name, lambda v: getattr(mx.sym, name)(v["x"]), {"x": x.astype(dtype)},
                lambda x: ref(x), grad=grad, rtol=1e-5 if dtype == np.float64 else 1e-6,
                id="" if dtype == np.float64 else "f32")


def _mod_inputs():
    """lhs / rhs = integer + fraction in [0.15, 0.85]: away from the jumps of mod."""
    rhs = away(lo=0.6, hi=1.4)
    lhs = (R.integers(-3, 3, SHAPE) + R.uniform(0.15, 0.85, SHAPE)) * rhs
    return lhs, rhs


def _apart(lhs):
    """An rhs at least 0.1 away from lhs (no ties for maximum/minimum)."""
    return lhs + away(lo=0.1, hi=0.6)


def _ties(lhs):
    """An rhs equal to lhs on its first row (comparisons must see exact ties)."""
    rhs = rnd()
    rhs[0] = lhs[0]
    return rhs


def _cmp(f):
    return lambda lhs, rhs: f(lhs, rhs).astype(np.float64)


_l = rnd()
_ml, _mr = _mod_inputs()
_pl = pos()
# same-shape binary op -> (reference, lhs, rhs)
BINARY = {
    "elemwise_add": (np.add, rnd(), rnd()), "elemwise_sub": (np.subtract, rnd(), rnd()),
    "elemwise_mul": (np.multiply, rnd(), rnd()), "elemwise_div": (np.divide, rnd(), away(lo=0.5)),
    "_mod": (np.mod, _ml, _mr), "_power": (np.power, _pl, rnd(lo=-2, hi=2)),
    "_maximum": (np.maximum, _l, _apart(_l)), "_minimum": (np.minimum, _l, _apart(_l)),
    "_hypot": (np.hypot, away(), away()),
}
_c = rnd()
NO_GRAD_BINARY = {
    "_equal": (_cmp(np.equal), _c, _ties(_c)), "_not_equal": (_cmp(np.not_equal), _c, _ties(_c)),
    "_greater": (_cmp(np.greater), _c, _ties(_c)), "_greater_equal": (_cmp(np.greater_equal), _c, _ties(_c)),
    "_lesser": (_cmp(np.less), _c, _ties(_c)), "_lesser_equal": (_cmp(np.less_equal), _c, _ties(_c)),
}


def _binary(name, ref, lhs, rhs, grad="numeric"):
    return Case(name, lambda v: getattr(mx.sym, name)(v["lhs"], v["rhs"]), {"lhs": lhs, "rhs": rhs},
                lambda lhs, rhs: ref(lhs, rhs), grad=grad)


def _with_ties(s):
    x = rnd(lo=-3, hi=3)
    x[0, :2] = s
    return x


def _frac_multiple(s):
    """x with x / s = integer + fraction in [0.15, 0.85] (mod by s is smooth there)."""
    return (R.integers(-3, 3, SHAPE) + R.uniform(0.15, 0.85, SHAPE)) * s


def _frac_divisor(s):
    """x with s / x = integer + fraction in [0.15, 0.85] (s mod x is smooth there)."""
    return s / (R.integers(1, 4, SHAPE) + R.uniform(0.15, 0.85, SHAPE)) * R.choice([-1.0, 1.0], SHAPE)


# (op, scalar, reference(x, s), input)
SCALAR = [
    ("_plus_scalar", 1.5, np.add, rnd()), ("_minus_scalar", -0.5, np.subtract, rnd()),
    ("_rminus_scalar", 2.0, lambda x, s: s - x, rnd()), ("_mul_scalar", -1.5, np.multiply, rnd()),
    ("_div_scalar", 4.0, np.divide, rnd()), ("_rdiv_scalar", 2.0, lambda x, s: s / x, away(lo=0.4)),
    ("_mod_scalar", 0.7, np.mod, _frac_multiple(0.7)), ("_mod_scalar", -1.3, np.mod, _frac_multiple(-1.3)),
    ("_rmod_scalar", 2.5, lambda x, s: np.mod(s, x), _frac_divisor(2.5)),
    ("_power_scalar", 2.5, np.power, pos()), ("_power_scalar", 3.0, np.power, away()),
    ("_rpower_scalar", 2.5, lambda x, s: np.power(s, x), rnd(lo=-2, hi=2)),
    ("_maximum_scalar", 0.2, np.maximum, _apart(np.full(SHAPE, 0.2))),
    ("_minimum_scalar", -0.3, np.minimum, _apart(np.full(SHAPE, -0.3))),
    ("_hypot_scalar", 0.5, np.hypot, rnd()),
]
NO_GRAD_SCALAR = [
    (name, 0.25, _cmp(f), _with_ties(0.25)) for name, f in (
        ("_equal_scalar", np.equal), ("_not_equal_scalar", np.not_equal), ("_greater_scalar", np.greater),
        ("_greater_equal_scalar", np.greater_equal), ("_lesser_scalar", np.less),
        ("_lesser_equal_scalar", np.less_equal))
]


def _scalar(name, s, ref, x, grad="numeric"):
    return Case(name, lambda v: getattr(mx.sym, name)(v["x"], scalar=s), {"x": x},
                lambda x: ref(x, s), grad=grad, id=f"s{s}")


def _clip(a_min, a_max):
    def ref(x):
        return np.maximum(np.minimum(x, a_max), a_min)
    return ref


def _smooth_l1(sigma):
    def ref(x):
        s2 = sigma * sigma
        return np.where(np.abs(x) < 1.0 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)
    return ref


def _where_ref(condition, x, y):
    c = condition.reshape(condition.shape + (1,) * (x.ndim - condition.ndim))
    return np.where(c != 0, x, y)


def _cast_grad(inputs, outs, head):
    """Cast's gradient is the head gradient cast back to the input dtype (exactly)."""
    return {"x": head[0].astype(inputs["x"].dtype)}


_clip_x = np.array([-1.3, -0.8, -0.2, 0.1, 0.45, 0.7, 1.2, -0.45, 0.3, -0.6, 0.9, 0.05])
_sl1_x = np.array([-2.0, -0.9, -0.3, -0.1, 0.05, 0.2, 0.4, 0.8, 1.5, -0.6, 0.15, 3.0]).reshape(3, 4)
_cond = np.array([[1.0, 0.0, 0.0, 2.5], [0.0, -1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])

OTHER = [
    Case("clip", lambda v: mx.sym.clip(v["x"], a_min=-0.5, a_max=0.5), {"x": _clip_x.reshape(3, 4)},
         _clip(-0.5, 0.5), id="inside"),
    Case("clip", lambda v: mx.sym.clip(v["x"], a_min=0.4, a_max=-0.4), {"x": _clip_x.reshape(3, 4)},
         _clip(0.4, -0.4), id="crossed"),
    Case("smooth_l1", lambda v: mx.sym.smooth_l1(v["x"], scalar=1.0), {"x": _sl1_x}, _smooth_l1(1.0),
         id="sigma1"),
    Case("smooth_l1", lambda v: mx.sym.smooth_l1(v["x"], scalar=2.0), {"x": _sl1_x}, _smooth_l1(2.0),
         id="sigma2"),
    Case("where", lambda v: mx.sym.where(v["condition"], v["x"], v["y"]),
         {"condition": _cond, "x": rnd(), "y": rnd()}, _where_ref, no_grad=("condition",), id="same"),
    Case("where", lambda v: mx.sym.where(v["condition"], v["x"], v["y"]),
         {"condition": np.array([1.0, 0.0, -2.0]), "x": rnd(3, 2, 2), "y": rnd(3, 2, 2)}, _where_ref,
         no_grad=("condition",), id="rows"),
    Case("Cast", lambda v: mx.sym.Cast(v["x"], dtype="float64"), {"x": rnd()}, lambda x: x.copy(),
         id="f64"),
    Case("Cast", lambda v: mx.sym.Cast(v["x"], dtype="float32"), {"x": rnd()},
         lambda x: x.astype(np.float32), grad=_cast_grad, id="f32"),
    Case("Cast", lambda v: mx.sym.Cast(v["x"], dtype="int32"), {"x": rnd(lo=-4, hi=4)},
         lambda x: np.trunc(x).astype(np.int32), grad="none", id="i32"),
    Case("Cast", lambda v: mx.sym.Cast(v["x"], dtype="float64"),
         {"x": np.array([[-3, 0, 7], [2, 5, -1]], dtype=np.int32)}, lambda x: x.astype(np.float64),
         grad="none", id="from_i32"),
    # a float16 value computed in float32 (what a Cast to float16 inside a graph becomes): ties go
    # to even (1 + 2**-11, 2049, 2051), subnormals to multiples of 2**-24, 65519 to float16's largest
    Case("_round_half", lambda v: mx.sym._round_half(v["x"]),
         {"x": np.array([[1.0004, 1.0005, 1.00048828125, 65519.0], [1e-8, -2.5e-7, -3.3, 0.1],
                         [2049.0, 2051.0, -0.0, 7.5e-5]])},
         lambda x: x.astype(np.float16).astype(np.float64), grad=lambda inputs, outs, head: {"x": head[0]},
         id="ties_subnormals"),
    # one variable on both sides: both gradients accumulate
    Case("elemwise_add", lambda v: mx.sym.elemwise_add(v["x"], v["x"]), {"x": rnd()}, lambda x: 2 * x,
         id="same_var"),
    Case("elemwise_mul", lambda v: v["x"] * v["x"], {"x": rnd()}, lambda x: x * x, id="same_var"),
    Case("elemwise_div", lambda v: mx.sym.elemwise_div(v["x"], v["x"] + 3.0), {"x": rnd()},
         lambda x: x / (x + 3.0), id="shared"),
    # a fused chain over several ops, and float32 arithmetic with float32 constants
    Case("exp", lambda v: mx.sym.exp(mx.sym.sin(v["x"])) * v["x"] - 2.0 * mx.sym.sqrt(v["y"]),
         {"x": rnd(), "y": pos()}, lambda x, y: np.exp(np.sin(x)) * x - 2.0 * np.sqrt(y), id="chain"),
    Case("_mul_scalar", lambda v: mx.sym.relu(v["x"] * 0.1 + 1.0) / 3.0, {"x": rnd().astype(np.float32)},
         lambda x: (np.maximum(x * np.float32(0.1) + np.float32(1.0), 0) / np.float32(3.0)),
         grad="none", id="f32"),
]

CASES = (
    [_unary(n, ref, x) for n, (ref, x) in UNARY.items()]
    + [_unary(n, ref, x, grad="none") for n, (ref, x) in NO_GRAD_UNARY.items()]
    + [_binary(n, ref, lhs, rhs) for n, (ref, lhs, rhs) in BINARY.items()]
    + [_binary(n, ref, lhs, rhs, grad="none") for n, (ref, lhs, rhs) in NO_GRAD_BINARY.items()]
    + [_scalar(*c) for c in SCALAR]
    + [_scalar(*c, grad="none") for c in NO_GRAD_SCALAR]
    + OTHER
)
