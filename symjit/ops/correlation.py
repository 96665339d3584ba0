"""``Correlation`` (FlowNet, Dosovitskiy et al. 2015) with MXNet 1.9.1's parameters: for each
position of ``data1`` (stride ``stride1``, after ``pad_size`` zero padding) and each displacement
in a ``(2*max_displacement/stride2 + 1)^2`` neighbourhood (step ``stride2``), the mean over a
``kernel_size`` x ``kernel_size`` patch and the channels of ``data1 * data2`` (or ``|data1 -
data2|`` when not ``is_multiply``). Output ``(N, D*D, TH, TW)`` with ``TH = ceil((H + 2*pad -
2*(max_displacement + (kernel_size-1)/2)) / stride1)``. Equal to MXNet 1.9.1's outputs; gradients
to both inputs. The per-element routines: :mod:`symjit.ops.correlation_kernels`.

>>> import numpy as np, symjit as mx
>>> a = mx.nd.array(np.ones((1, 2, 3, 3)))
>>> mx.nd.Correlation(a, a * 2, max_displacement=1).shape
(1, 9, 1, 1)
"""
from __future__ import annotations

import math

from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_float, need_rank, shape_str

__all__ = ["geometry"]


def geometry(p: dict, h: int, w: int) -> tuple[int, int, int, int]:
    """(TH, TW, radius, grid width) for data of spatial size (h, w)."""
    k, md, s1, s2, pad = (p[n] for n in ("kernel_size", "max_displacement", "stride1", "stride2", "pad_size"))
    border = md + (k - 1) // 2
    th = math.ceil((h + 2 * pad - 2 * border) / s1)
    tw = math.ceil((w + 2 * pad - 2 * border) / s1)
    r = md // s2
    return th, tw, r, 2 * r + 1


def _check(p: dict) -> None:
    if p["kernel_size"] % 2 == 0:
        raise ParamError(f"Correlation: kernel_size must be odd, got {p['kernel_size']}")
    for n in ("stride1", "stride2"):
        if p[n] < 1:
            raise ParamError(f"Correlation: {n} must be >= 1, got {p[n]}")


def _shape(p: dict, ins: list, aux: list):
    known = next((s for s in ins if s is not None), None)
    if known is None:
        return list(ins), [None], []
    need_rank(known, "data1", (4,), " (N, C, H, W)")
    for name, s in zip(("data1", "data2"), ins):
        if s is not None and s != known:
            raise RuleError(f"data1 and data2 must have one shape, got {name} {shape_str(s)} and "
                            f"{shape_str(known)}")
    th, tw, _, gw = geometry(p, known[2], known[3])
    if th < 1 or tw < 1:
        raise RuleError(f"data {shape_str(known)} is too small for max_displacement={p['max_displacement']}, "
                        f"kernel_size={p['kernel_size']}, pad_size={p['pad_size']}: the output would be "
                        f"{th}x{tw}")
    return [known, known], [(known[0], gw * gw, th, tw)], []


def _dtype(p: dict, ins: list, aux: list):
    dt = next((d for d in ins if d is not None), None)
    if dt is not None:
        need_float(dt, "data1")
    return [dt, dt], [dt], []


def _grad(b, node, ograds):
    return list(b.add("_backward_Correlation", [ograds[0], *node.inputs], params=node.params))


_PARAMS = (
    Param("kernel_size", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="patch size (odd)"),
    Param("max_displacement", "int", 1, check=lambda v: v >= 0, check_msg=">= 0", doc="largest displacement"),
    Param("stride1", "int", 1, doc="step over data1's positions"),
    Param("stride2", "int", 1, doc="step over the displacements"),
    Param("pad_size", "int", 0, check=lambda v: v >= 0, check_msg=">= 0", doc="zero padding of both inputs"),
    Param("is_multiply", "bool", True, doc="products (else absolute differences)"),
)

register(OpDef(name="Correlation", params=_PARAMS, arguments=("data1", "data2"), check=_check, shape=_shape,
               dtype=_dtype, kind=Kind.OPAQUE, grad=_grad, extra={"family": "correlation"},
               doc="Mean patch products (or absolute differences) of data1 with data2 over a neighbourhood "
                   "of displacements (FlowNet's correlation layer)."))
register(OpDef(name="_backward_Correlation", params=_PARAMS, arguments=("ograd", "data1", "data2"),
               outputs=("data1_grad", "data2_grad"), check=_check,
               shape=lambda p, ins, aux: (list(ins), [ins[1], ins[2]], []),
               dtype=lambda p, ins, aux: (list(ins), [ins[1], ins[2]], []),
               kind=Kind.OPAQUE, extra={"backward_of": "Correlation", "family": "correlation"},
               doc="The gradients of Correlation's two inputs, each element gathering what it "
                   "contributed to."))
