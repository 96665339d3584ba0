"""Cases for FullyConnected, Activation, SoftmaxOutput, dot and the reductions."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(42)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _fc_ref(flatten=True, no_bias=False):
    def ref(data, weight, bias=None):
        x = data.reshape(data.shape[0], -1) if flatten else data
        out = x @ weight.T
        return out if no_bias else out + bias
    return ref


def _act(x, kind):
    return {"relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)), "tanh": np.tanh(x),
            "softrelu": np.log1p(np.exp(x)), "softsign": x / (1 + np.abs(x))}[kind]


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _so_grad(inputs, outs, head):
    p = outs[0]
    onehot = np.eye(p.shape[1])[inputs["label"].astype(int)]
    return {"data": p - onehot}


CASES = [
    Case("FullyConnected", lambda v: mx.sym.FullyConnected(v["data"], v["weight"], v["bias"], num_hidden=3),
         {"data": rnd(4, 5), "weight": rnd(3, 5), "bias": rnd(3)}, _fc_ref(), id="2d"),
    Case("FullyConnected", lambda v: mx.sym.FullyConnected(v["data"], v["weight"], v["bias"], num_hidden=3),
         {"data": rnd(2, 2, 3), "weight": rnd(3, 6), "bias": rnd(3)}, _fc_ref(), id="flatten"),
    Case("FullyConnected", lambda v: mx.sym.FullyConnected(v["data"], v["weight"], num_hidden=2,
                                                           no_bias=True, flatten=False),
         {"data": rnd(2, 3, 4), "weight": rnd(2, 4)}, _fc_ref(False, True), id="noflatten"),
    *[Case("Activation", (lambda k: lambda v: mx.sym.Activation(v["x"], act_type=k))(kind),
           {"x": rnd(3, 4) + 0.05}, (lambda k: lambda x: _act(x, k))(kind), id=kind)
      for kind in ("relu", "sigmoid", "tanh", "softrelu", "softsign")],
    Case("SoftmaxOutput", lambda v: mx.sym.SoftmaxOutput(v["data"], v["label"]),
         {"data": rnd(4, 5), "label": np.array([0.0, 3.0, 4.0, 1.0])},
         lambda data, label: _softmax(data), grad=_so_grad, no_grad=("label",)),
    Case("dot", lambda v: mx.sym.dot(v["a"], v["b"]), {"a": rnd(3, 4), "b": rnd(4, 2)},
         lambda a, b: a @ b, id="nn"),
    Case("dot", lambda v: mx.sym.dot(v["a"], v["b"], transpose_a=True, transpose_b=True),
         {"a": rnd(4, 3), "b": rnd(2, 4)}, lambda a, b: a.T @ b.T, id="tt"),
    Case("dot", lambda v: mx.sym.dot(v["a"], v["b"]), {"a": rnd(2, 3, 4), "b": rnd(4, 5)},
         lambda a, b: np.tensordot(a, b, 1), id="nd"),
    Case("sum", lambda v: mx.sym.sum(v["x"], axis=(0, 2)), {"x": rnd(2, 3, 4)},
         lambda x: x.sum(axis=(0, 2)), id="axes"),
    Case("sum", lambda v: mx.sym.sum(v["x"]), {"x": rnd(2, 3)}, lambda x: x.sum().reshape(1), id="all"),
    Case("mean", lambda v: mx.sym.mean(v["x"], axis=1, keepdims=True), {"x": rnd(2, 3, 4)},
         lambda x: x.mean(axis=1, keepdims=True)),
    Case("max", lambda v: mx.sym.max(v["x"], axis=1), {"x": rnd(3, 4)}, lambda x: x.max(axis=1)),
    Case("min", lambda v: mx.sym.min(v["x"], axis=0, exclude=True), {"x": rnd(3, 4)},
         lambda x: x.min(axis=1)),
]
