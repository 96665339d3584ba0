"""Normalisation layers: BatchNorm and LayerNorm.

>>> import symjit as mx
>>> bn = mx.sym.BatchNorm(mx.sym.Variable('data'), name='bn1')
>>> bn.list_auxiliary_states(), bn.infer_shape(data=(2, 3, 4, 4))[2]
(['bn1_moving_mean', 'bn1_moving_var'], [(3,), (3,)])
"""
from __future__ import annotations

import math

import numpy as np

from ..base import shape_str
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, need_rank, norm_axis

__all__ = ["BatchNorm", "LayerNorm", "bn_batch_stats"]

_F32 = np.dtype("float32")


def _channel_shape(data: tuple, axis: int) -> tuple[int]:
    """(C,) with C = data.shape[axis]; RuleError naming 'data' for a bad axis."""
    need_rank(data, "data", 1)
    try:
        ax = norm_axis(axis, len(data))
    except RuleError:
        raise RuleError(f"axis={axis} is out of range for argument 'data' of shape "
                        f"{shape_str(data)}") from None
    return (data[ax],)


# ---------------------------------------------------------------------------------------------
# BatchNorm: per-channel (axis) normalisation with moving statistics as aux states.


def _bn_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    # as MXNet: the per-channel shapes are inferred once data's is known, not from each other
    c = None if data is None else _channel_shape(data, p["axis"])
    return [data, c, c], [data, c, c], [c, c]


def _bn_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        pd = next((d for d in list(ins[1:]) + list(aux) if d is not None), None)
        return [None, pd, pd], [None, pd, pd], [pd, pd]
    need_float(data, "data")
    pd = _F32 if data == np.dtype("float16") else data
    return [data, pd, pd], [data, pd, pd], [pd, pd]


def bn_batch_stats(node) -> bool:
    """True when the node normalises with batch statistics (training, no use_global_stats)."""
    return bool(node.train) and not node.params["use_global_stats"]


def _bn_grad(b, node, ograds):
    """``_backward_BatchNorm(dout, data, gamma, saved mean, saved inverse std)``; the gradients of
    the mean/var outputs are blocked (as in MXNet) and the aux states get none."""
    if ograds[0] is None:
        return [None] * len(node.inputs)
    data, gamma = node.inputs[0], node.inputs[1]
    mean, invstd = node.outputs[1], node.outputs[2]
    dx, dgamma, dbeta = b.add("_backward_BatchNorm", [ograds[0], data, gamma, mean, invstd],
                              params=node.params)
    return [dx, dgamma, dbeta, None, None]


def _bn_backward_rules(n_vectors: int) -> tuple:
    """Shape and dtype rules of a BatchNorm gradient op reading ``(ograd, data, *vectors)``, the
    vectors per channel, and writing ``(data_grad, gamma_grad, beta_grad)``."""
    def shape(p: dict, ins: list, aux: list):
        data = ins[1]
        c = None if data is None else _channel_shape(data, p["axis"])
        return [data, data] + [c] * n_vectors, [data, c, c], []

    def dtype(p: dict, ins: list, aux: list):
        data, pd = ins[1], ins[2]
        return [data, data] + [pd] * n_vectors, [data, pd, pd], []
    return shape, dtype


_bn_backward_shape, _bn_backward_dtype = _bn_backward_rules(3)


BatchNorm = register(OpDef(
    name="BatchNorm",
    params=(
        Param("eps", "float", 1e-3, check=lambda v: v >= 0, check_msg=">= 0",
              doc="added to the variance before the square root"),
        Param("momentum", "float", 0.9, doc="moving average decay of the moving statistics"),
        Param("fix_gamma", "bool", True, doc="use gamma = 1 (and gradient 0 for gamma)"),
        Param("use_global_stats", "bool", False,
              doc="normalise with the moving statistics in training too"),
        Param("output_mean_var", "bool", False, doc="also output the batch mean and variance"),
        Param("axis", "int", 1, doc="the channel axis"),
        Param("cudnn_off", "bool", False, doc="turn off cuDNN (accepted, unused)"),
        Param("min_calib_range", "float", None, nullable=True, doc="quantisation calibration (unused)"),
        Param("max_calib_range", "float", None, nullable=True, doc="quantisation calibration (unused)"),
    ),
    arguments=("data", "gamma", "beta"),
    aux=("moving_mean", "moving_var"),
    outputs=("output", "mean", "var"),
    visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
    shape=_bn_shape,
    dtype=_bn_dtype,
    extra={"input_var_attrs": {"moving_mean": {"__init__": '["zero", {}]'},  # as MXNet writes them
                               "moving_var": {"__init__": '["one", {}]'}},
           "reads_mode": True},
    kind=Kind.OPAQUE,
    grad=_bn_grad,
    doc="Batch normalisation over every axis but ``axis``: "
        "``out = (data - mean) / sqrt(var + eps) * gamma + beta`` with batch statistics in training "
        "(updating moving_mean/moving_var) and the moving statistics at inference. gamma, beta and "
        "the aux states have shape (C,), C = data.shape[axis]; they are float32 for float16 data. "
        "The hidden outputs are the mean and the inverse std ``1/sqrt(var + eps)`` (MXNet's "
        "``output_mean_var``); a training forward updates the moving statistics in place with the "
        "biased batch variance.",
))

register(OpDef(
    name="_backward_BatchNorm",
    params=BatchNorm.params,
    arguments=("ograd", "data", "gamma", "mean", "invstd"),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    shape=_bn_backward_shape,
    dtype=_bn_backward_dtype,
    kind=Kind.OPAQUE,
    extra={"backward_of": "BatchNorm"},
    doc="BatchNorm's gradient (dx, dgamma, dbeta) from the head gradient and the saved mean and "
        "inverse std; with use_global_stats or in inference mode the statistics are constants.",
))


register(OpDef(
    name="_backward_BatchNorm_relu",
    params=BatchNorm.params,
    arguments=("ograd", "data", "gamma", "beta", "mean", "invstd"),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    shape=_bn_backward_rules(4)[0],
    dtype=_bn_backward_rules(4)[1],
    kind=Kind.OPAQUE,
    extra={"backward_of": "BatchNorm"},
    doc="The gradient of ``relu(BatchNorm(data))`` (dx, dgamma, dbeta) from the gradient of the "
        "relu's output, with the BatchNorm output recomputed from data and the saved statistics: "
        "the simplify pass rewrites ``_backward_BatchNorm(_backward_Activation(relu))`` into it so "
        "the relu's output need not stay alive through the backward GEMM before it.",
))


def bn_infer(x, gamma, beta, mean, var, eps, fix_gamma):
    """BatchNorm with fixed statistics, one element: ``(x - mean) / sqrt(var + eps) * gamma + beta``."""
    g = 1.0 if fix_gamma else gamma
    return (x - mean) / math.sqrt(var + eps) * g + beta


def _bn_infer_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[0]], []


register(OpDef(
    name="_BatchNorm_inference",
    params=(Param("eps", "float", 1e-3), Param("fix_gamma", "bool", True)),
    arguments=("data", "gamma", "beta", "moving_mean", "moving_var"),
    shape=_bn_infer_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.BROADCAST,
    body=lambda p: (bn_infer, (p["eps"], p["fix_gamma"])),
    extra={"rewrite_of": "BatchNorm"},
    doc="BatchNorm with the moving statistics as one broadcast elementwise op; the compiler's "
        "simplify pass rewrites inference-mode BatchNorm into it (per-channel inputs reshaped to "
        "broadcast along the channel axis) so it fuses into a GEMM/convolution epilogue.",
))


# ---------------------------------------------------------------------------------------------
# LayerNorm: normalisation along one axis, affine per element of that axis.


def _ln_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:   # as MXNet: gamma/beta are inferred once data's shape is known
        return [None, None, None], [None, None, None], []
    c = _channel_shape(data, p["axis"])
    ax = p["axis"] % len(data)
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return [data, c, c], [data, stat, stat], []


def _ln_dtype(p: dict, ins: list, aux: list):
    dt = next((d for d in ins if d is not None), None)
    if dt is not None:
        need_float(dt, "data")
    return [dt, dt, dt], [dt, dt, dt], []


def _ln_grad(b, node, ograds):
    """``_backward_LayerNorm(dout, data, gamma, mean, std)``; mean/std gradients are blocked."""
    if ograds[0] is None:
        return [None] * len(node.inputs)
    data, gamma = node.inputs[0], node.inputs[1]
    mean, std = node.outputs[1], node.outputs[2]
    return b.add("_backward_LayerNorm", [ograds[0], data, gamma, mean, std], params=node.params)


def _ln_backward_shape(p: dict, ins: list, aux: list):
    data = ins[1]
    if data is None:
        return list(ins), [None, None, None], []
    (_, c, _), (_, stat, _), _ = _ln_shape(p, [data, None, None], [])
    return [data, data, c, stat, stat], [data, c, c], []


LayerNorm = register(OpDef(
    name="LayerNorm",
    params=(
        Param("axis", "int", -1, doc="the axis to normalise along"),
        Param("eps", "float", 1e-5, check=lambda v: v >= 0, check_msg=">= 0",
              doc="added to the variance before the square root"),
        Param("output_mean_var", "bool", False, doc="also output the mean and standard deviation"),
    ),
    arguments=("data", "gamma", "beta"),
    outputs=("output", "mean", "std"),
    visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
    shape=_ln_shape,
    dtype=_ln_dtype,
    kind=Kind.OPAQUE,
    grad=_ln_grad,
    doc="Layer normalisation along ``axis``: ``out = (data - mean) / sqrt(var + eps) * gamma + beta``; "
        "gamma and beta have shape (data.shape[axis],); mean and std keep data's rank with 1 on axis.",
))

register(OpDef(
    name="_backward_LayerNorm",
    params=LayerNorm.params,
    arguments=("ograd", "data", "gamma", "mean", "std"),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    shape=_ln_backward_shape,
    dtype=lambda p, ins, aux: ([ins[1]] * 5, [ins[1]] * 3, []),
    kind=Kind.OPAQUE,
    extra={"backward_of": "LayerNorm"},
    doc="LayerNorm's gradient (dx, dgamma, dbeta) from the head gradient and the saved mean and std.",
))
