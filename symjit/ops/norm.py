"""Normalisation layers: BatchNorm and LayerNorm.

>>> import symjit as mx
>>> bn = mx.sym.BatchNorm(mx.sym.Variable('data'), name='bn1')
>>> bn.list_auxiliary_states(), bn.infer_shape(data=(2, 3, 4, 4))[2]
(['bn1_moving_mean', 'bn1_moving_var'], [(3,), (3,)])
"""
from __future__ import annotations

import numpy as np

from ..base import shape_str
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, need_rank, norm_axis

__all__ = ["BatchNorm", "LayerNorm"]

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


def _first_vector(names: list[str], shapes: list) -> tuple | None:
    """The first known shape among per-channel inputs; RuleError unless it is 1-D."""
    for name, s in zip(names, shapes):
        if s is not None:
            if len(s) != 1:
                raise RuleError(f"argument '{name}' must be 1-D (C,), got shape {shape_str(s)}")
            return s
    return None


# ---------------------------------------------------------------------------------------------
# BatchNorm: per-channel (axis) normalisation with moving statistics as aux states.


def _bn_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is not None:
        c = _channel_shape(data, p["axis"])
    else:
        c = _first_vector(["gamma", "beta", "moving_mean", "moving_var"], list(ins[1:]) + list(aux))
    return [data, c, c], [data, c, c], [c, c]


def _bn_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        pd = next((d for d in list(ins[1:]) + list(aux) if d is not None), None)
        return [None, pd, pd], [None, pd, pd], [pd, pd]
    need_float(data, "data")
    pd = _F32 if data == np.dtype("float16") else data
    return [data, pd, pd], [data, pd, pd], [pd, pd]


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
                               "moving_var": {"__init__": '["one", {}]'}}},
    kind=Kind.OPAQUE,
    doc="Batch normalisation over every axis but ``axis``: "
        "``out = (data - mean) / sqrt(var + eps) * gamma + beta`` with batch statistics in training "
        "(updating moving_mean/moving_var) and the moving statistics at inference. gamma, beta and "
        "the aux states have shape (C,), C = data.shape[axis]; they are float32 for float16 data.",
))


# ---------------------------------------------------------------------------------------------
# LayerNorm: normalisation along one axis, affine per element of that axis.


def _ln_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None, *[_first_vector(["gamma", "beta"], list(ins[1:]))] * 2], [None, None, None], []
    c = _channel_shape(data, p["axis"])
    ax = p["axis"] % len(data)
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return [data, c, c], [data, stat, stat], []


def _ln_dtype(p: dict, ins: list, aux: list):
    dt = next((d for d in ins if d is not None), None)
    if dt is not None:
        need_float(dt, "data")
    return [dt, dt, dt], [dt, dt, dt], []


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
    doc="Layer normalisation along ``axis``: ``out = (data - mean) / sqrt(var + eps) * gamma + beta``; "
        "gamma and beta have shape (data.shape[axis],); mean and std keep data's rank with 1 on axis.",
))
