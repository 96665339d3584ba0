"""Target-neutral rules of elementwise layers that need more than a scalar body: LeakyReLU (the
body depends on ``act_type``; prelu reads a per-channel ``gamma``; rrelu also writes its ``mask``
output) and prelu's data gradient. Each returns element expressions, so ops after them fuse into
the same loop on every target.
"""
from __future__ import annotations

from ..ops.nn_grad import prelu_data_grad, prelu_forward, prelu_gamma_axes, rrelu_slope
from .emit import elem_index, literal
from .rules import ANY, rule


def _channel(k, data: str, gamma: str, idx: list[str]) -> str:
    """The index of gamma's element for data element ``idx`` (gamma lies along axes 0 and 1)."""
    gshape = k.info[gamma].shape
    axes = prelu_gamma_axes(k.info[data].shape, gshape)
    return ", ".join("0" if n == 1 else idx[a] for a, n in zip(axes, gshape))


def lrelu_lower(k, node, ins, outs):
    """Every act_type as an element expression; rrelu's second output, the ``mask``, is the slope
    it used, written by the same loop."""
    p = node.params
    x, out = ins[0], outs[0]
    dt = k.info[out].dtype
    if p["act_type"] == "prelu":
        leaky, gamma = k.module.body(prelu_forward), ins[1]
        return lambda idx: f"{leaky}({x}[{elem_index(idx)}], {gamma}[{_channel(k, x, gamma, idx)}])"
    fn, consts = node.op.body(p)
    alias = k.module.body(fn)
    args = "".join(f", {literal(c, dt)}" for c in consts)
    value = lambda idx: f"{alias}({x}[{elem_index(idx)}]{args})"   # noqa: E731
    if p["act_type"] == "rrelu":
        slope = literal(rrelu_slope(p), dt)
        return {0: value, 1: lambda idx: slope}
    return value


def prelu_data_lower(k, node, ins, outs):
    """``_backward_PReLU_data(ograd, data, gamma)``: ``g`` where x > 0, else ``g * gamma[c]``."""
    g, x, gamma = ins
    sel = k.module.body(prelu_data_grad)
    return lambda idx: (f"{sel}({g}[{elem_index(idx)}], {x}[{elem_index(idx)}], "
                        f"{gamma}[{_channel(k, x, gamma, idx)}])")


# the loop reads x[i] before it writes out[i] (prelu's gamma is read by channel: no pair)
rule("LeakyReLU", ANY, lrelu_lower, epilogue=True,
     inplace=lambda p: () if p["act_type"] == "prelu" else ((0, 0),))
rule("_backward_PReLU_data", ANY, prelu_data_lower, epilogue=True)
