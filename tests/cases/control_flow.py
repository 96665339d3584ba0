"""Cases for the control-flow ops (symjit/symbol/control_flow.py, while_loop.py): ``_foreach`` (a
loop body unrolled at bind: a tanh RNN step reading an outside weight and an outside computed
value), ``_while_loop`` (a counted loop stopping before ``max_iterations``: its condition and step
programs run from the host, the step reading an outside weight and computed value) and ``_cond``
(select by a one-element predicate), against numpy loops; gradients by finite differences."""

from __future__ import annotations

import numpy as np

import symjit as mx
from symjit.symbol.control_flow import _select

from ..opcheck import Case

R = np.random.default_rng(97)


def _rnn(v):
    bias = v["b"] * 2.0      # computed outside the loop: an input of the loop node

    def step(x, states):
        h = mx.sym.tanh(mx.sym.broadcast_add(mx.sym.dot(x, v["w"]) + states[0], bias))
        return [h, h * 0.5], [h]
    (outs, halves), states = mx.sym.contrib.foreach(step, v["data"], [v["h0"]])
    return mx.sym.Group([outs, halves, states[0]])


def _rnn_ref(data, h0, w, b):
    h, outs = h0, []
    for x in data:
        h = np.tanh(x @ w + h + 2.0 * b)
        outs.append(h)
    return [np.stack(outs), np.stack(outs) * 0.5, h]


def _while(v):
    twice = v["b"] * 2.0     # computed outside the loop: an input of the loop node

    def step(i, h):
        y = mx.sym.tanh(h * v["w"])
        return [y, y * 3], [i + 1, mx.sym.broadcast_add(y, twice)]
    (ys, y3), (i, h) = mx.sym.contrib.while_loop(lambda i, h: i < 3, step, [v["i"], v["h"]], max_iterations=5)
    return mx.sym.Group([ys, y3, i, h])


def _while_ref(i, h, w, b):
    rows = []
    while i[0] < 3 and len(rows) < 5:
        y = np.tanh(h * w)
        rows.append(y)
        h, i = y + 2.0 * b, i + 1
    stacked = np.concatenate([np.stack(rows), np.zeros((5 - len(rows), *h.shape))])
    return [stacked, stacked * 3, i, h]


def _cond_ref(p, x, y):
    return [x * 2 if p[0] != 0 else y + 1]


CASES = [
    Case("_foreach", _rnn, {"data": R.uniform(-1, 1, (3, 2, 4)), "h0": R.uniform(-1, 1, (2, 5)),
                            "w": R.uniform(-1, 1, (4, 5)), "b": R.uniform(-1, 1, (5,))}, _rnn_ref),
    Case("_while_loop", _while, {"i": np.array([1.0]), "h": R.uniform(-1, 1, (2, 3)),
                                 "w": R.uniform(-1, 1, (2, 3)), "b": R.uniform(-1, 1, (3,))},
         _while_ref, no_grad=("i",)),
    Case("_cond", lambda v: _select(v["p"], [v["x"] * 2], [v["y"] + 1])[0],
         {"p": np.array([1.0]), "x": R.uniform(-1, 1, (2, 3)), "y": R.uniform(-1, 1, (2, 3))}, _cond_ref,
         no_grad=("p",), id="then"),
    Case("_cond", lambda v: _select(v["p"], [v["x"] * 2], [v["y"] + 1])[0],
         {"p": np.array([0.0]), "x": R.uniform(-1, 1, (2, 3)), "y": R.uniform(-1, 1, (2, 3))}, _cond_ref,
         no_grad=("p",), id="else"),
]
