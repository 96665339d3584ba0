"""Cases for the input-less operators (symjit/ops/source.py) and the mx.sym functions built on them
and on the scalar/symbol binary ops (symjit/symbol/functions.py). Each source op is multiplied by
an input, so the case also runs a gradient through it (the op itself has none)."""
from __future__ import annotations

import numpy as np

import symjit as mx
from symjit.symbol.symbol import make_op_symbol

from ..opcheck import Case

R = np.random.default_rng(5)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


CASES = [
    Case("_zeros", lambda v: mx.sym.zeros((2, 3), dtype="float64") + v["x"], {"x": rnd(2, 3)},
         lambda x: x.copy()),
    Case("_ones", lambda v: mx.sym.ones((2, 3), dtype="float64") * v["x"], {"x": rnd(2, 3)},
         lambda x: x.copy()),
    Case("_full", lambda v: mx.sym.full((3,), 2.5, dtype="float64") * v["x"], {"x": rnd(3)},
         lambda x: 2.5 * x),
    Case("_arange", lambda v: mx.sym.arange(1, 4, step=0.5, repeat=2, dtype="float64") * v["x"],
         {"x": rnd(12)},
         lambda x: np.repeat(np.arange(1, 4, 0.5), 2) * x),
    Case("_arange", lambda v: mx.sym.arange(5, dtype="int32") + v["x"],
         {"x": np.array([1, 2, 3, 4, 5], dtype=np.int32)}, lambda x: x + np.arange(5, dtype=np.int32),
         grad="none", id="int32_stop_only"),
    Case("_eye", lambda v: mx.sym.eye(3, 4, k=-1, dtype="float64") * v["x"], {"x": rnd(3, 4)},
         lambda x: np.eye(3, 4, k=-1) * x),
    Case("_linspace", lambda v: mx.sym.linspace(-1, 2, 7, dtype="float64") * v["x"], {"x": rnd(7)},
         lambda x: np.linspace(-1, 2, 7) * x),
    Case("_linspace", lambda v: mx.sym.linspace(0, 1, 4, endpoint=False, dtype="float64") + v["x"],
         {"x": rnd(4)},
         lambda x: np.linspace(0, 1, 4, endpoint=False) + x, id="no_endpoint"),
    Case("_eye_tri", lambda v: make_op_symbol("_eye_tri", N=3, lower=False, dtype="float64") * v["x"],
         {"x": rnd(3, 3)}, lambda x: np.triu(np.ones((3, 3))) * x),
    # the binary functions: symbol-symbol, symbol-number, number-symbol
    Case("_maximum", lambda v: mx.sym.maximum(v["a"], v["b"]), {"a": np.array([0.1, -0.5, 0.9]),
                                                                 "b": np.array([0.4, -0.8, 0.2])},
         lambda a, b: np.maximum(a, b), id="sym_function"),
    Case("_minimum_scalar", lambda v: mx.sym.minimum(0.3, v["a"]), {"a": np.array([0.1, -0.5, 0.9])},
         lambda a: np.minimum(a, 0.3), id="sym_function"),
    Case("_rpower_scalar", lambda v: mx.sym.pow(2.0, v["a"]), {"a": rnd(3)}, lambda a: 2.0 ** a,
         id="sym_function"),
    Case("_hypot_scalar", lambda v: mx.sym.hypot(v["a"], 0.5), {"a": rnd(3)}, lambda a: np.hypot(a, 0.5),
         id="sym_function"),
]
