"""Second derivatives: the gradient rules of the elementwise backward ops.

An elementwise op's gradient is an internal op ``_backward_<f>(ograd, s) = ograd * h(s)``, where
``s`` is the op's input ``x`` or its output ``y`` and ``h(s)`` is ``f'(x)`` written in terms of
``s``. Differentiating that (a gradient of a gradient, ``autograd.grad(..., create_graph=True)``)
gives ``_backward_<f>(dout, s)`` for ``ograd`` and ``dout * ograd * h'(s)`` for ``s``; when ``s``
is the output ``y``, the compiler's autodiff carries the latter on through ``f``'s own rule.
:data:`SECOND` holds the rule of each backward op, which its record (``elementwise.py``,
``elementwise_math.py``) takes as its ``grad``; each ``h'`` is built from registered operators, so
third and higher derivatives follow the same way. This module registers no operator.
"""
from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["SECOND"]


def _pow(b, s: int, p: float, k: float = 1.0) -> int:
    """``k * s ** p``."""
    v = b.add1("_power_scalar", s, scalar=p)
    return v if k == 1.0 else b.add1("_mul_scalar", v, scalar=k)


def _times(b, x: int, v: int, k: float = 1.0) -> int:
    """``k * x * v``."""
    v = b.add1("elemwise_mul", x, v)
    return v if k == 1.0 else b.add1("_mul_scalar", v, scalar=k)


def _one_minus_sq(b, s: int) -> int:
    return b.add1("_rminus_scalar", b.add1("square", s), scalar=1.0)


def _plus_sq(b, s: int, c: float) -> int:
    return b.add1("_plus_scalar", b.add1("square", s), scalar=c)


# h'(s) per backward op: a value built from s, a number (a constant factor), or None (zero)
_DH: dict[str, Callable] = {
    # s = x
    "log": lambda b, x: _pow(b, x, -2.0, -1.0),
    "log1p": lambda b, x: _pow(b, b.add1("_plus_scalar", x, scalar=1.0), -2.0, -1.0),
    "log2": lambda b, x: _pow(b, x, -2.0, -1.0 / math.log(2.0)),
    "log10": lambda b, x: _pow(b, x, -2.0, -1.0 / math.log(10.0)),
    "square": lambda b, x: 2.0,
    "abs": lambda b, x: None,
    "softsign": lambda b, x: _times(b, b.add1("sign", x),
                                    _pow(b, b.add1("_plus_scalar", b.add1("abs", x), scalar=1.0), -3.0),
                                    -2.0),
    "erf": lambda b, x: _times(b, x, b.add1("exp", b.add1("negative", b.add1("square", x))),
                               -4.0 / math.sqrt(math.pi)),
    "cos": lambda b, x: b.add1("negative", b.add1("cos", x)),
    "sin": lambda b, x: b.add1("negative", b.add1("sin", x)),
    "arcsin": lambda b, x: _times(b, x, _pow(b, _one_minus_sq(b, x), -1.5)),
    "arccos": lambda b, x: _times(b, x, _pow(b, _one_minus_sq(b, x), -1.5), -1.0),
    "arctan": lambda b, x: _times(b, x, _pow(b, _plus_sq(b, x, 1.0), -2.0), -2.0),
    "sinh": lambda b, x: b.add1("sinh", x),
    "cosh": lambda b, x: b.add1("cosh", x),
    "arcsinh": lambda b, x: _times(b, x, _pow(b, _plus_sq(b, x, 1.0), -1.5), -1.0),
    "arccosh": lambda b, x: _times(b, x, _pow(b, _plus_sq(b, x, -1.0), -1.5), -1.0),
    "arctanh": lambda b, x: _times(b, x, _pow(b, _one_minus_sq(b, x), -2.0), 2.0),
    # s = y
    "expm1": lambda b, y: 1.0,
    "sqrt": lambda b, y: _pow(b, y, -2.0, -0.5),
    "rsqrt": lambda b, y: _pow(b, y, 2.0, -1.5),
    "cbrt": lambda b, y: _pow(b, y, -3.0, -2.0 / 3.0),
    "reciprocal": lambda b, y: b.add1("_mul_scalar", y, scalar=-2.0),
    "relu": lambda b, y: None,
    "sigmoid": lambda b, y: b.add1("_rminus_scalar", b.add1("_mul_scalar", y, scalar=2.0), scalar=1.0),
    "tanh": lambda b, y: b.add1("_mul_scalar", y, scalar=-2.0),
    "tan": lambda b, y: b.add1("_mul_scalar", y, scalar=2.0),
    "rcbrt": lambda b, y: _pow(b, y, 3.0, -4.0 / 3.0),
    "erfinv": lambda b, y: _times(b, y, b.add1("exp", b.add1("square", y)), math.sqrt(math.pi)),
    "clip": lambda b, x: None,
}


def _rule(dh: Callable) -> Callable:
    def grad(b, node, ograds):
        dout = ograds[0]
        g, s = node.inputs
        d_ograd = b.add(node.op, [dout, s], params=node.params)[0]
        h = dh(b, s)
        if h is None:
            return [d_ograd, None]
        scaled = b.add1("elemwise_mul", dout, g)
        if isinstance(h, float):
            return [d_ograd, scaled if h == 1.0 else b.add1("_mul_scalar", scaled, scalar=h)]
        return [d_ograd, b.add1("elemwise_mul", scaled, h)]
    return grad


SECOND: dict[str, Callable] = {f"_backward_{name}": _rule(dh) for name, dh in _DH.items()}
"""Backward op name -> its gradient rule."""
