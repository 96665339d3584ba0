"""Output and loss heads: SoftmaxOutput (alias Softmax), softmax, log_softmax, the regression
outputs, MakeLoss and BlockGrad (alias stop_gradient).

Heads marked ``loss=True`` supply their own head gradient: SoftmaxOutput (softmax minus one-hot
label), the *RegressionOutput ops and MakeLoss.

>>> import symjit as mx
>>> head = mx.sym.SoftmaxOutput(mx.sym.Variable('data'), multi_output=True, name='sm')
>>> head.infer_shape(data=(2, 5, 4, 4))[0]
[(2, 5, 4, 4), (2, 4, 4)]
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, shape_str
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, need_rank, norm_axis, prod

__all__ = [
    "SoftmaxOutput", "softmax", "log_softmax", "LinearRegressionOutput", "LogisticRegressionOutput",
    "MAERegressionOutput", "MakeLoss", "BlockGrad", "identity", "label_class", "NO_CLASS",
]

_NORMALIZATIONS = ("null", "batch", "valid")


NO_CLASS = -(2 ** 62)   # what a NaN or huge label truncates to: never a class, never ignore_label


def label_class(v: float) -> int:
    """MXNet's ``static_cast<int>(label)``: truncation toward zero; NaN or huge gives
    :data:`NO_CLASS`. A plain scalar function: lowerings wrap it for each target.

    >>> label_class(2.7), label_class(-0.5), label_class(float('nan')) == NO_CLASS
    (2, 0, True)
    """
    if not (-1e15 < v < 1e15):
        return NO_CLASS
    return int(v)


def identity(x: float) -> float:
    """The scalar body of identity-forward ops."""
    return x


def _unary_shape(p: dict, ins: list, aux: list):
    return [ins[0]], [ins[0]], []


def _label_dtype(p: dict, ins: list, aux: list):
    """Output has data's dtype; the label defaults to data's dtype but may be any numeric type."""
    data, label = ins
    if data is not None:
        need_float(data, "data")
    if label is None:
        label = data
    elif label.kind not in "fiu":
        raise RuleError(f"argument 'label' must have a numeric dtype, got {label.name}")
    return [data, label], [data], []


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput: softmax forward, (softmax - onehot(label)) * grad_scale backward.


def _softmax_label_shapes(p: dict, data: tuple) -> tuple[tuple, list[tuple]]:
    """The label shape inferred for ``data`` and the shapes accepted."""
    n = data[0]
    if p["multi_output"]:
        need_rank(data, "data", 2, " (N, C, ...) with multi_output=True")
        default = (n, *data[2:])
        return default, [default, (n, prod(data[2:])), data]
    default = data[:-1] if p["preserve_shape"] else (n,)
    return default, [default, data]


def _softmax_output_shape(p: dict, ins: list, aux: list):
    data, label = ins
    if data is None:
        return [None, label], [None], []
    need_rank(data, "data", 1)
    default, accepted = _softmax_label_shapes(p, data)
    if label is None:
        label = default
    elif label not in accepted:
        raise RuleError(f"argument 'label' has shape {shape_str(label)}; for data {shape_str(data)} "
                        f"(multi_output={p['multi_output']}, preserve_shape={p['preserve_shape']}) "
                        f"it must be {shape_str(default)} (class indices) or {shape_str(data)} "
                        f"(probabilities)")
    return [data, label], [data], []


def _so_grad(b, node, ograds):
    if node.params["out_grad"]:
        raise MXNetError(f"SoftmaxOutput '{node.name}': out_grad=True is not supported")
    prob, label = node.outputs[0], node.inputs[1]
    return [b.add("_backward_SoftmaxOutput", [prob, label], params=node.params)[0], None]


def _so_backward_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[0]], []


SoftmaxOutput = register(OpDef(
    name="SoftmaxOutput",
    params=(
        Param("grad_scale", "float", 1.0, doc="scale of the gradient"),
        Param("ignore_label", "float", -1.0, doc="label value whose gradient is zero (with use_ignore)"),
        Param("multi_output", "bool", False, doc="softmax along axis 1 of (N, C, d1, ...) data"),
        Param("use_ignore", "bool", False, doc="zero the gradient where label == ignore_label"),
        Param("preserve_shape", "bool", False, doc="softmax along the last axis, keeping the shape"),
        Param("normalization", "str", "null", choices=_NORMALIZATIONS,
              doc="gradient normalisation: none, by batch size, or by the count of valid labels"),
        Param("out_grad", "bool", False, doc="multiply the gradient by the head gradient"),
        Param("smooth_alpha", "float", 0.0, check=lambda v: 0.0 <= v <= 1.0, check_msg="in [0, 1]",
              doc="label smoothing"),
    ),
    arguments=("data", "label"),
    aliases=("Softmax",),
    shape=_softmax_output_shape,
    dtype=_label_dtype,
    kind=Kind.OPAQUE,
    loss=True,
    grad=_so_grad,
    doc="Softmax head with cross-entropy gradient. By default data is seen as (N, size/N) and the "
        "label is (N,); preserve_shape=True uses the last axis (label data.shape[:-1]); "
        "multi_output=True uses axis 1 of (N, C, d1, ...) (label (N, d1, ...)). A label shaped like "
        "data holds probabilities. ``Softmax`` is its deprecated alias.",
))


register(OpDef(
    name="_backward_SoftmaxOutput",
    params=SoftmaxOutput.params,
    arguments=("prob", "label"),
    shape=_so_backward_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.OPAQUE,
    extra={"backward_of": "SoftmaxOutput"},
    doc="SoftmaxOutput's gradient: (prob - one_hot(label)) * grad_scale / normalisation.",
))


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax along an axis, optionally over the first `length` entries only.


def _softmax_args(p: dict) -> list[str]:
    return ["data", "length"] if p["use_length"] else ["data"]


def _softmax_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None, *ins[1:]], [None], []
    need_rank(data, "data", 1)
    ax = norm_axis(p["axis"], len(data))
    if not p["use_length"]:
        return [data], [data], []
    return [data, data[:ax] + data[ax + 1:]], [data], []


def _softmax_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is not None:
        need_float(data, "data")
    out = np.dtype(p["dtype"]) if p["dtype"] is not None else data
    if not p["use_length"]:
        return [data], [out], []
    length = ins[1]
    if length is not None and length.kind not in "iu":
        raise RuleError(f"argument 'length' must have an integer dtype, got {length.name}")
    return [data, length], [out], []


def _softmax_params() -> tuple[Param, ...]:
    return (
        Param("axis", "int", -1, doc="the axis to normalise along"),
        Param("temperature", "float", None, nullable=True, check=lambda v: v != 0, check_msg="!= 0",
              doc="divide data by this before the exponential (None means 1)"),
        Param("dtype", "str", None, choices=("float16", "float32", "float64"), nullable=True,
              doc="output dtype (None: data's dtype)"),
        Param("use_length", "bool", False, nullable=True,
              doc="take a 'length' input: only the first length entries along axis count"),
    )


def _softmax_grad(backward: str):
    def grad(b, node, ograds):
        """``_backward_(log_)softmax(dout, output[, length])``, cast back to data's dtype."""
        rest = [None] * (len(node.inputs) - 1)
        if ograds[0] is None:
            return [None, *rest]
        dx = b.add(backward, [ograds[0], node.outputs[0], *node.inputs[1:]], params=node.params)[0]
        data_dt = b.g.values[node.inputs[0]].dtype
        if b.g.values[dx].dtype != data_dt:
            dx = b.add1("Cast", dx, dtype=data_dt.name)
        return [dx, *rest]
    return grad


def _softmax_backward_shape(p: dict, ins: list, aux: list):
    y = next((s for s in ins[:2] if s is not None), None)
    rest = list(ins[2:])
    if y is not None and p["use_length"]:
        ax = norm_axis(p["axis"], len(y))
        rest = [y[:ax] + y[ax + 1:]]
    return [y, y, *rest], [y], []


def _softmax_backward_dtype(p: dict, ins: list, aux: list):
    y = ins[1]
    return [y, y, *ins[2:]], [y], []


def _softmax_op(name: str, doc: str) -> OpDef:
    op = register(OpDef(
        name=name,
        params=_softmax_params(),
        arguments=_softmax_args,
        shape=_softmax_shape,
        dtype=_softmax_dtype,
        kind=Kind.OPAQUE,
        grad=_softmax_grad(f"_backward_{name}"),
        doc=doc + " With use_length=True the integer 'length' input (data's shape without axis) "
                  "limits each softmax to its first length entries; the others output 0.",
    ))
    register(OpDef(
        name=f"_backward_{name}",
        params=_softmax_params(),
        arguments=lambda p: ["ograd", "output", "length"] if p["use_length"] else ["ograd", "output"],
        shape=_softmax_backward_shape,
        dtype=_softmax_backward_dtype,
        kind=Kind.OPAQUE,
        extra={"backward_of": name},
        doc=f"{name}'s gradient from the head gradient and its output (output's dtype).",
    ))
    return op


softmax = _softmax_op("softmax",
                      "``exp(x / t) / sum(exp(x / t), axis)`` along ``axis`` (t = temperature).")
log_softmax = _softmax_op("log_softmax",
                          "``log(softmax(data, axis, temperature))``, computed stably.")


# ---------------------------------------------------------------------------------------------
# Regression outputs: forward is data (sigmoid(data) for logistic); the gradient comes from label.


def _regression_shape(p: dict, ins: list, aux: list):
    data, label = ins
    if data is None:
        return [None, label], [None], []
    need_rank(data, "data", 1)
    if label is None:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    elif not label or label[0] != data[0] or prod(label) != prod(data):
        raise RuleError(f"argument 'label' has shape {shape_str(label)}; it must have the same first "
                        f"dimension and size as data {shape_str(data)}")
    return [data, label], [data], []


def _reg_grad(b, node, ograds):
    """The head's own gradient from its output and the label (head gradients are ignored)."""
    dx = b.add(f"_backward_{node.op.name}", [node.outputs[0], node.inputs[1]], params=node.params)[0]
    return [dx, None]


def _regression(name: str, doc: str) -> OpDef:
    params = (Param("grad_scale", "float", 1.0, doc="scale of the gradient"),)
    op = register(OpDef(
        name=name,
        params=params,
        arguments=("data", "label"),
        shape=_regression_shape,
        dtype=_label_dtype,
        kind=Kind.OPAQUE,
        loss=True,
        grad=_reg_grad,
        doc=doc + " The label defaults to data's shape, or (N,) for (N, 1) data; any label with "
                  "data's first dimension and size is accepted. m is the number of outputs per "
                  "sample (data.size / N).",
    ))
    register(OpDef(
        name=f"_backward_{name}",
        params=params,
        arguments=("output", "label"),
        shape=lambda p, ins, aux: (list(ins), [ins[0]], []),
        dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
        kind=Kind.OPAQUE,
        extra={"backward_of": name},
        doc=f"{name}'s gradient from its output and the label.",
    ))
    return op


LinearRegressionOutput = _regression(
    "LinearRegressionOutput",
    "Squared-loss head: forward outputs data; gradient (data - label) * grad_scale / m.")
LogisticRegressionOutput = _regression(
    "LogisticRegressionOutput",
    "Logistic head: forward outputs sigmoid(data); gradient (out - label) * grad_scale / m.")
MAERegressionOutput = _regression(
    "MAERegressionOutput",
    "Absolute-loss head: forward outputs data; gradient sign(data - label) * grad_scale / m.")


# ---------------------------------------------------------------------------------------------
# MakeLoss and BlockGrad: identity forward.


def _identity_body(p: dict):
    return identity, ()


def _makeloss_grad(b, node, ograds):
    """grad_scale (normalised) everywhere, ignoring head gradients."""
    return [b.add("_backward_MakeLoss", [node.inputs[0]], params=node.params)[0]]


MakeLoss = register(OpDef(
    name="MakeLoss",
    aliases=("make_loss",),
    params=(
        Param("grad_scale", "float", 1.0, doc="the head gradient"),
        Param("valid_thresh", "float", 0.0, doc="with normalization='valid', entries above it count"),
        Param("normalization", "str", "null", choices=_NORMALIZATIONS,
              doc="divide the gradient by 1, the batch size or the count of valid entries"),
    ),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    body=_identity_body,
    loss=True,
    grad=_makeloss_grad,
    doc="Marks data as a loss: forward outputs data; the gradient is grad_scale everywhere, divided "
        "by 1 ('null'), data.shape[0] ('batch') or the count of entries > valid_thresh ('valid', "
        "at least 1). Head gradients are ignored. ``make_loss`` is MXNet's parameterless form "
        "(gradient 1).",
))

register(OpDef(
    name="_backward_MakeLoss",
    params=MakeLoss.params,
    shape=_unary_shape,
    kind=Kind.OPAQUE,
    extra={"backward_of": "MakeLoss"},
    doc="MakeLoss's gradient: a constant array of data's shape.",
))

BlockGrad = register(OpDef(
    name="BlockGrad",
    aliases=("stop_gradient",),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    body=_identity_body,
    grad=lambda b, node, ograds: [None],
    doc="Identity forward; no gradient flows back to data (its gradient is zero).",
))



# ---------------------------------------------------------------------------------------------
# SVMOutput: identity forward; the (squared) hinge loss gradient from the label.


def _svm_shape(p: dict, ins: list, aux: list):
    data, label = ins
    if data is None:
        return [None, label], [None], []
    need_rank(data, "data", 2)
    want = (data[0],)
    if label is not None and tuple(label) != want:
        raise RuleError(f"argument 'label' has shape {shape_str(label)}; SVMOutput takes one class per "
                        f"sample, {shape_str(want)} for data {shape_str(data)}")
    return [data, want], [data], []


def _svm_grad(b, node, ograds):
    """Per sample and class k, with x the score, m the margin and c the coefficient: for the label's
    class -2c max(m - x, 0) (-c [x < m] with use_linear), for the others 2c max(m + x, 0)
    (c [x > -m]). Head gradients are ignored, as for the other output heads."""
    p = node.params
    x, label = node.inputs
    shape = b.g.values[x].shape
    flat = b.add1("Reshape", x, shape=(shape[0], -1))
    k = b.g.values[flat].shape[1]
    hot = b.add1("one_hot", label, depth=k, dtype=b.g.values[x].dtype.name)
    m, c = p["margin"], p["regularization_coefficient"]
    if p["use_linear"]:
        own = b.add1("_mul_scalar", b.add1("_lesser_scalar", flat, scalar=m), scalar=-c)
        other = b.add1("_mul_scalar", b.add1("_greater_scalar", flat, scalar=-m), scalar=c)
    else:
        own = b.add1("_mul_scalar", b.add1("relu", b.add1("_rminus_scalar", flat, scalar=m)), scalar=-2 * c)
        other = b.add1("_mul_scalar", b.add1("relu", b.add1("_plus_scalar", flat, scalar=m)), scalar=2 * c)
    grad = b.add1("elemwise_add", other, b.add1("elemwise_mul", hot, b.add1("elemwise_sub", own, other)))
    return [b.add1("Reshape", grad, shape=shape), None]


SVMOutput = register(OpDef(
    name="SVMOutput",
    params=(
        Param("margin", "float", 1.0, doc="the margin of the hinge"),
        Param("regularization_coefficient", "float", 1.0, doc="scale of the gradient"),
        Param("use_linear", "bool", False, doc="L1-SVM (hinge) instead of L2-SVM (squared hinge)"),
    ),
    arguments=("data", "label"),
    shape=_svm_shape,
    dtype=_label_dtype,
    kind=Kind.OPAQUE,
    loss=True,
    grad=_svm_grad,
    doc="Support-vector output head over (N, classes) scores and (N,) labels: forward outputs data; "
        "the gradient is the (squared, default) hinge loss's, per MXNet's SVMOutput.",
))
