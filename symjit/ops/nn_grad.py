"""Gradient rules and scalar facts of the neural-network layers in :mod:`symjit.ops.nn`.

Gradients are graph nodes: internal ``_backward_*`` ops (registered in :mod:`symjit.ops.nn`) for
convolution (data, weight and bias gradients as three ops, so that an unused one costs nothing
once dead ops are dropped), pooling and embedding; elementwise products for Dropout; an
elementwise ``_backward_LeakyReLU`` for leaky/elu/selu/gelu/rrelu; and for prelu an
epilogue op for the data gradient plus an elementwise op and a ``sum`` for ``gamma``.
The targets' lowerings are in :mod:`symjit.lower` (``cpu/nn.py``...).
"""
from __future__ import annotations


def conv_grad(b, node, ograds):
    """Data, weight and (unless no_bias) bias gradients, one internal op each."""
    dout = ograds[0]
    x, w = node.inputs[0], node.inputs[1]
    p = node.params
    grads = [b.add("_backward_Convolution_data", [dout, x, w], params=p)[0],
             b.add("_backward_Convolution_weight", [dout, x, w], params=p)[0]]
    if not p["no_bias"]:
        grads.append(b.add("_backward_Convolution_bias", [dout], params=p)[0])
    return grads


def pool_args(p: dict) -> list[str]:
    """Inputs of ``_backward_Pooling``: lp also needs the forward output."""
    return ["ograd", "data", "output"] if p["pool_type"] == "lp" else ["ograd", "data"]


def pool_grad(b, node, ograds):
    ins = [ograds[0], node.inputs[0]] + ([node.outputs[0]] if node.params["pool_type"] == "lp" else [])
    return [b.add("_backward_Pooling", ins, params=node.params)[0]]


def embed_grad(b, node, ograds):
    """No gradient for the indices; the weight gets the scatter-added head gradient."""
    p = node.params
    dw = b.add("_backward_Embedding", [ograds[0], node.inputs[0]], params={
        "input_dim": p["input_dim"], "output_dim": p["output_dim"]}, raw=True)[0]
    return [None, dw]


def dropout_grad(b, node, ograds):
    """``dout * mask`` (elementwise; broadcast when the mask is shared along ``axes``)."""
    dout, mask = ograds[0], node.outputs[1]
    same = b.g.values[mask].shape == b.g.values[dout].shape
    return [b.add1("elemwise_mul" if same else "broadcast_mul", dout, mask)]


def rrelu_slope(p: dict) -> float:
    """The fixed slope symjit's rrelu uses: the mean of the bounds (MXNet's inference slope)."""
    return (p["lower_bound"] + p["upper_bound"]) / 2.0


def prelu_gamma_axes(data: tuple, gamma: tuple) -> tuple | None:
    """The data axis each axis of prelu's ``gamma`` lies along, or None when it does not fit.

    As MXNet, gamma is matched from its last axis backwards against the data's axes 1 and 0 (in
    that order): an axis of gamma equal to the data's, or of length 1, takes it; a data axis it
    does not fit is skipped. So (C,) and (1,) lie along axis 1 and (N, C) along axes 0 and 1.

    >>> prelu_gamma_axes((3, 4, 5), (4,)), prelu_gamma_axes((3, 4), (3, 4))
    ((1,), (0, 1))
    """
    axes, s = [], len(gamma) - 1
    for i in range(min(1, len(data) - 1), -1, -1):
        if s >= 0 and gamma[s] in (data[i], 1):
            axes.append(i)
            s -= 1
    return tuple(reversed(axes)) if s == -1 else None


def prelu_forward(x: float, gamma: float) -> float:
    """x if x > 0 else gamma * x (the scalar body of prelu)."""
    return x if x > 0.0 else gamma * x


def prelu_data_grad(g: float, x: float, gamma: float) -> float:
    """d prelu / d x times the head gradient."""
    return g if x > 0.0 else g * gamma


def lrelu_grad(b, node, ograds):
    """Elementwise ``_backward_LeakyReLU(dout, x)``; prelu: data and gamma gradients."""
    p = node.params
    dout, x = ograds[0], node.inputs[0]
    if p["act_type"] != "prelu":
        return [b.add("_backward_LeakyReLU", [dout, x], params=p)[0]]
    gamma = node.inputs[1]
    dx = b.add1("_backward_PReLU_data", dout, x, gamma)
    contrib = b.add1("_backward_PReLU_gamma", dout, x)
    gshape = b.g.values[gamma].shape
    axes = prelu_gamma_axes(b.g.values[x].shape, gshape)
    kept = tuple(a for a, n in zip(axes, gshape) if n != 1)
    if not kept:
        dg = b.add("sum", [contrib], params={}, raw=True)[0]
    else:
        dg = b.add1("sum", contrib, axis=kept, exclude=True)
    if b.g.values[dg].shape != tuple(gshape):
        dg = b.add1("Reshape", dg, shape=tuple(gshape))
    return [dx, dg]
