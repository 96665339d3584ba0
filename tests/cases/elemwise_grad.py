"""Cases for symjit/ops/elementwise_grad.py: the elementwise backward ops ``_backward_<f>(ograd, s)``
run as ops of their own, so their gradient rules (second derivatives, what
``autograd.grad(create_graph=True)`` differentiates) are checked against finite differences. Each
reference is ``ograd * f'`` written from ``s`` (the op's input x, or its output y); inputs stay
inside each op's domain and away from its kinks."""
from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(11)
SHAPE = (2, 3)


def rnd(lo: float, hi: float) -> np.ndarray:
    return R.uniform(lo, hi, SHAPE)


def signed(lo: float, hi: float) -> np.ndarray:
    return rnd(lo, hi) * R.choice([-1.0, 1.0], SHAPE)


_C = 2.0 / math.sqrt(math.pi)

# name -> (f' from s, s)
DERIVATIVE = {
    "log": (lambda x: 1 / x, rnd(0.5, 2)), "log1p": (lambda x: 1 / (1 + x), rnd(-0.5, 2)),
    "log2": (lambda x: 1 / (x * math.log(2)), rnd(0.5, 2)),
    "log10": (lambda x: 1 / (x * math.log(10)), rnd(0.5, 2)),
    "square": (lambda x: 2 * x, rnd(-2, 2)), "abs": (np.sign, signed(0.2, 2)),
    "softsign": (lambda x: 1 / (1 + np.abs(x)) ** 2, signed(0.2, 2)),
    "erf": (lambda x: _C * np.exp(-x * x), rnd(-1.5, 1.5)),
    "cos": (lambda x: -np.sin(x), rnd(-3, 3)), "sin": (np.cos, rnd(-3, 3)),
    "arcsin": (lambda x: 1 / np.sqrt(1 - x * x), rnd(-0.8, 0.8)),
    "arccos": (lambda x: -1 / np.sqrt(1 - x * x), rnd(-0.8, 0.8)),
    "arctan": (lambda x: 1 / (1 + x * x), rnd(-2, 2)),
    "sinh": (np.cosh, rnd(-2, 2)), "cosh": (np.sinh, rnd(-2, 2)),
    "arcsinh": (lambda x: 1 / np.sqrt(x * x + 1), rnd(-2, 2)),
    "arccosh": (lambda x: 1 / np.sqrt(x * x - 1), rnd(1.3, 3)),
    "arctanh": (lambda x: 1 / (1 - x * x), rnd(-0.8, 0.8)),
    # s is the output y
    "expm1": (lambda y: y + 1, rnd(-0.5, 2)), "sqrt": (lambda y: 0.5 / y, rnd(0.5, 2)),
    "rsqrt": (lambda y: -0.5 * y ** 3, rnd(0.5, 2)), "cbrt": (lambda y: 1 / (3 * y * y), signed(0.5, 2)),
    "reciprocal": (lambda y: -y * y, signed(0.5, 2)), "relu": (lambda y: (y > 0) * 1.0, signed(0.2, 2)),
    "sigmoid": (lambda y: y * (1 - y), rnd(0.1, 0.9)), "tanh": (lambda y: 1 - y * y, rnd(-0.9, 0.9)),
    "tan": (lambda y: 1 + y * y, rnd(-2, 2)), "rcbrt": (lambda y: -y ** 4 / 3, signed(0.5, 2)),
    "erfinv": (lambda y: math.sqrt(math.pi) / 2 * np.exp(y * y), rnd(-1, 1)),
}


def _case(name: str, deriv, s: np.ndarray) -> Case:
    op = f"_backward_{name}"
    return Case(op, lambda v, op=op: getattr(mx.sym, op)(v["ograd"], v["s"]),
                {"ograd": rnd(-2, 2), "s": s}, lambda ograd, s, d=deriv: ograd * d(s))


CASES = (
    [_case(n, d, s) for n, (d, s) in DERIVATIVE.items()]
    + [Case("_backward_clip", lambda v: mx.sym._backward_clip(v["ograd"], v["s"], a_min=-0.5, a_max=0.5),
            {"ograd": rnd(-2, 2), "s": np.array([[-0.9, -0.3, 0.1], [0.4, 0.7, -0.6]])},
            lambda ograd, s: ograd * ((s > -0.5) & (s < 0.5)))]
)
