"""``IdentityAttachKLSparseReg``: the identity on the way forward, plus the gradient of a KL
sparseness penalty on the way back (Ng's sparse autoencoder): with ``rho`` the running mean
activation of each channel (axis 1), the gradient is ``ograd + penalty * (-target / rho + (1 -
target) / (1 - rho))``. A training forward updates ``rho`` (the aux state ``moving_avg``):
``rho = momentum * rho + (1 - momentum) * mean(data over every axis but 1)``, and the backward uses
it. MXNet 1.9.1 computes that same gradient but leaves ``moving_avg`` unchanged (it updates a copy),
which makes the documented running average constant; symjit keeps the average, as documented.
Lowering: :mod:`symjit.lower.kl_sparse`.

>>> import numpy as np, symjit as mx
>>> x = mx.sym.IdentityAttachKLSparseReg(mx.sym.var('data'), name='kl')
>>> x.list_auxiliary_states()
['kl_moving_avg']
"""
from __future__ import annotations

from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []


def _shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], list(aux)
    if len(data) < 2:
        raise RuleError(f"data must have a channel axis 1, got {shape_str(data)}")
    return [data], [data], [(data[1],)]


def _dtype(p: dict, ins: list, aux: list):
    dt = ins[0] if ins[0] is not None else aux[0]
    if dt is not None:
        need_float(dt, "data")
    return [dt], [dt], [dt]


def _grad(b, node, ograds):
    p = node.params
    data, avg = node.inputs
    shape = b.g.values[data].shape
    t, pen = p["sparseness_target"], p["penalty"]
    term = b.add1("elemwise_add", b.add1("_rdiv_scalar", avg, scalar=-t * pen),
                  b.add1("_rdiv_scalar", b.add1("_rminus_scalar", avg, scalar=1.0), scalar=(1.0 - t) * pen))
    term = b.add1("Reshape", term, shape=(1, shape[1]) + (1,) * (len(shape) - 2))
    if ograds[0] is None:
        return [b.add1("broadcast_to", term, shape=shape), None]
    return [b.add1("broadcast_add", ograds[0], term), None]


register(OpDef(
    name="IdentityAttachKLSparseReg",
    params=(Param("sparseness_target", "float", 0.1, check=lambda v: 0.0 < v < 1.0, check_msg="in (0, 1)",
                  doc="the target mean activation"),
            Param("penalty", "float", 0.001, doc="weight of the sparseness penalty"),
            Param("momentum", "float", 0.9, check=lambda v: 0.0 <= v <= 1.0, check_msg="in [0, 1]",
                  doc="momentum of the running mean activation")),
    aux=("moving_avg",), shape=_shape, dtype=_dtype, kind=Kind.OPAQUE, grad=_grad,
    hint="identityattachklsparsereg", extra={"reads_mode": True},
    doc="Identity forward; backward adds the gradient of a KL sparseness penalty on the running mean "
        "activation per channel (aux ``moving_avg``, updated by a training forward).",
))
