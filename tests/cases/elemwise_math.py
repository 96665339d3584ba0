"""Cases for symjit/ops/elementwise_math.py: trigonometric and hyperbolic ops and their inverses,
degrees/radians, gamma/gammaln/erfinv, rcbrt, rint/fix, logical_not, hard_sigmoid and the logical
ops. References are numpy (scipy-free: gamma by math.gamma, erfinv by bisection of math.erf);
inputs stay inside each op's domain and away from its kinks."""
from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(7)
SHAPE = (3, 4)


def rnd(lo=-1.0, hi=1.0, shape=SHAPE):
    return R.uniform(lo, hi, shape)


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


def _erfinv_ref(y: float) -> float:
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return 0.5 * (lo + hi)


def _rint_ref(x):
    return np.rint(x)   # numpy rounds halves to even, as MXNet's rint


def _hard_sigmoid(alpha, beta):
    return lambda x: np.clip(alpha * x + beta, 0.0, 1.0)


def _halves():
    x = R.integers(-5, 5, SHAPE) + 0.5
    x[0] += R.uniform(-0.4, 0.4, 4)   # some off the halves too
    return x


_GAMMA_X = np.concatenate([R.uniform(0.3, 4.0, (2, 4)),
                           -R.uniform(0.2, 0.8, (1, 4)) - R.integers(0, 3, (1, 4))])

UNARY = {   # name -> (reference, input)
    "tan": (np.tan, rnd(-1.2, 1.2)), "arcsin": (np.arcsin, rnd(-0.9, 0.9)),
    "arccos": (np.arccos, rnd(-0.9, 0.9)), "arctan": (np.arctan, rnd(-3, 3)),
    "sinh": (np.sinh, rnd(-2, 2)), "cosh": (np.cosh, rnd(-2, 2)), "arcsinh": (np.arcsinh, rnd(-3, 3)),
    "arccosh": (np.arccosh, rnd(1.2, 4.0)), "arctanh": (np.arctanh, rnd(-0.9, 0.9)),
    "degrees": (np.degrees, rnd(-3, 3)), "radians": (np.radians, rnd(-200, 200)),
    "gamma": (_vec(math.gamma), _GAMMA_X), "gammaln": (_vec(lambda v: math.lgamma(v)), _GAMMA_X),
    "erfinv": (_vec(_erfinv_ref), rnd(-0.95, 0.95)),
    "rcbrt": (lambda x: 1.0 / np.cbrt(x), np.where(R.random(SHAPE) < 0.5, -1, 1) * rnd(0.3, 3.0)),
}
NO_GRAD = {
    "rint": (_rint_ref, _halves()), "fix": (np.trunc, rnd(-4, 4)),
    "logical_not": (lambda x: (x == 0).astype(np.float64), np.where(R.random(SHAPE) < 0.4, 0.0, rnd())),
}
_SPECIAL = np.array([[np.nan, np.inf, -np.inf, 0.5], [-1.0, 0.0, np.nan, 2.0], [np.inf, 1e300, -3.0,
                                                                                -np.inf]])
CONTRIB = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}


def _unary(name, ref, x, grad="numeric"):
    return Case(name, lambda v: getattr(mx.sym, name)(v["x"]), {"x": x}, lambda x: ref(x), grad=grad)


def _bools(shape):
    return np.where(R.random(shape) < 0.5, 0.0, rnd(shape=shape))


def _logic(f):
    return lambda lhs, rhs: f(lhs != 0, rhs != 0).astype(np.float64)


LOGICAL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _logical(name, f, lhs, rhs):
    return Case(name, lambda v: getattr(mx.sym, name)(v["lhs"], v["rhs"]),
                {"lhs": _bools(lhs), "rhs": _bools(rhs)}, _logic(f), grad="none")

# the domain edges: NaN outside, inf at the ends (as numpy)
_EDGES = np.array([[-2.0, -1.0, 1.0, 2.0]])


def _edges(name, ref):
    def quiet(x):
        with np.errstate(all="ignore"):
            return ref(x)
    return Case(name, lambda v: getattr(mx.sym, name)(v["x"]), {"x": _EDGES}, quiet, grad="none", id="edges")


CASES = (
    [_unary(n, ref, x) for n, (ref, x) in UNARY.items()]
    + [_unary(n, ref, x, grad="none") for n, (ref, x) in NO_GRAD.items()]
    + [Case(f"_contrib_{n}", lambda v, n=n: getattr(mx.sym.contrib, n)(v["x"]), {"x": _SPECIAL},
            lambda x, f=f: f(x).astype(np.float64), grad="none") for n, f in CONTRIB.items()]
    + [Case("hard_sigmoid", lambda v: mx.sym.hard_sigmoid(v["x"]), {"x": rnd(-4, 4)},
            _hard_sigmoid(0.2, 0.5), id="default")]
    + [Case("hard_sigmoid", lambda v: mx.sym.hard_sigmoid(v["x"], alpha=0.5, beta=0.25),
            {"x": np.array([[-3.1, -1.2, 0.3, 2.2], [-0.4, 0.9, 1.8, -0.2], [0.1, 1.3, -0.7, 3.3]])},
            _hard_sigmoid(0.5, 0.25), id="alpha")]
    + [_logical(f"_logical_{n}", f, SHAPE, SHAPE) for n, f in LOGICAL.items()]
    + [_logical(f"broadcast_logical_{n}", f, (3, 1), (1, 4)) for n, f in LOGICAL.items()]
    + [_edges(n, f) for n, f in (("arcsin", np.arcsin), ("arccos", np.arccos), ("arctanh", np.arctanh),
                                 ("erfinv", _vec(lambda v: math.copysign(math.inf, v) if abs(v) == 1 else
                                                 (math.nan if abs(v) > 1 else _erfinv_ref(v)))))]
    + [Case("gamma", lambda v: mx.sym.gamma(v["x"]), {"x": np.array([[1.0, 2.0, 5.0, 0.5]])},
            lambda x: np.array([[1.0, 1.0, 24.0, math.sqrt(math.pi)]]), grad="none", id="exact")]
)
