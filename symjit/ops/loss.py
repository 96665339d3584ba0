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
from .lowering import call, rows_view, view2d
from .norm import axis_view3
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, need_rank, norm_axis, prod

__all__ = [
    "SoftmaxOutput", "softmax", "log_softmax", "LinearRegressionOutput", "LogisticRegressionOutput",
    "MAERegressionOutput", "MakeLoss", "BlockGrad", "identity",
]

_NORMALIZATIONS = ("null", "batch", "valid")


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


_NORM_CODES = {"null": 0, "batch": 1, "valid": 2}   # symjit.kernels.cpu.softmax.NORM_*


def _so_views(k, node, data: str, other: str, label: str | None = None):
    """(layout, data view, other view, label view) for SoftmaxOutput's kernels."""
    p = node.params
    if p["multi_output"]:
        v = [k.tmp("v") for _ in range(2)]
        for name, arr in zip(v, (data, other)):
            k.line(f"{name} = {arr}.reshape({arr}.shape[0], {arr}.shape[1], -1)")
        return "3d", v[0], v[1]
    view = rows_view if p["preserve_shape"] else view2d
    return "2d", view(k, data), view(k, other)


def _so_lower_cpu(k, node, ins, outs):
    layout, x, prob = _so_views(k, node, ins[0], outs[0])
    call(k, "softmax", "softmax_output_forward" + ("_3d" if layout == "3d" else ""), x, prob)


def _so_grad(b, node, ograds):
    if node.params["out_grad"]:
        raise MXNetError(f"SoftmaxOutput '{node.name}': out_grad=True is not supported")
    prob, label = node.outputs[0], node.inputs[1]
    return [b.add("_backward_SoftmaxOutput", [prob, label], params=node.params)[0], None]


def _so_backward_lower_cpu(k, node, ins, outs):
    p = node.params
    prob, label, dx = ins[0], ins[1], outs[0]
    if k.info[label].shape == k.info[prob].shape:   # labels are probabilities
        pv, lv, dv = view2d(k, prob), view2d(k, label), view2d(k, dx)
        call(k, "softmax", "softmax_output_backward_prob", pv, lv, dv, p["grad_scale"])
        return
    layout, pv, dv = _so_views(k, node, prob, dx)
    lab = k.tmp("l")
    args = (p["grad_scale"], p["ignore_label"], p["use_ignore"], _NORM_CODES[p["normalization"]],
            p["smooth_alpha"])
    if layout == "3d":
        k.line(f"{lab} = {label}.reshape({pv}.shape[0], {pv}.shape[2])")
        call(k, "softmax", "softmax_output_backward_3d", pv, lab, dv, *args)
    else:
        k.line(f"{lab} = {label}.reshape({pv}.shape[0])")
        call(k, "softmax", "softmax_output_backward", pv, lab, dv, *args)


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
    lower={"cpu": _so_lower_cpu},
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
    lower={"cpu": _so_backward_lower_cpu},
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


def _inv_temperature(p: dict) -> str:
    t = p["temperature"]
    return repr(1.0 / (1.0 if t is None else float(t)))


def _length_loop(k, node, x3: str, length: str) -> tuple[str, str, str, str]:
    """Open loops over (A, B) of an (A, K, B) view reading the valid length of each position; the
    kernel raises MXNetError for a length outside [0, K]. Returns (a, b, n, length view)."""
    a, b, n, lv = k.tmp("a"), k.tmp("b"), k.tmp("n"), k.tmp("l")
    err = k.imp("symjit.base", "MXNetError")
    msg = (f"{node.op.name} '{node.name}': argument 'length' holds a value outside "
           "[0, length of the softmax axis]")
    k.line(f"{lv} = {length}.reshape({x3}.shape[0], {x3}.shape[2])")
    k.line(f"for {a} in range({x3}.shape[0]):")
    k.line(f"    for {b} in range({x3}.shape[2]):")
    k.indent += 2
    k.line(f"{n} = {lv}[{a}, {b}]")
    k.line(f"if {n} < 0 or {n} > {x3}.shape[1]:")
    k.line(f"    raise {err}({msg!r})")
    return a, b, n, lv


def _emit_length_forward(k, node, x3: str, o3: str, length: str, log: bool) -> None:
    """(log-)softmax over the first ``length`` entries of the middle axis; the rest is 0."""
    a, b, n, _ = _length_loop(k, node, x3, length)
    it, m, s, q = _inv_temperature(node.params), k.tmp("m"), k.tmp("s"), k.tmp("q")
    x = f"{x3}[{a}, {q}, {b}] * {it}"
    k.line(f"{m} = -np.inf")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {m} = max({m}, {x})")
    k.line(f"{s} = 0.0")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {s} += math.exp({x} - {m})")
    val = f"{x} - {m} - math.log({s})" if log else f"math.exp({x} - {m}) / {s}"
    k.line(f"for {q} in range({x3}.shape[1]):")
    k.line(f"    {o3}[{a}, {q}, {b}] = {val} if {q} < {n} else 0.0")
    k.indent -= 2


def _emit_length_backward(k, node, g3: str, y3: str, d3: str, length: str, log: bool) -> None:
    """(log-)softmax gradient over the first ``length`` entries; 0 for the rest."""
    a, b, n, _ = _length_loop(k, node, y3, length)
    it, s, q = _inv_temperature(node.params), k.tmp("s"), k.tmp("q")
    g, y = f"{g3}[{a}, {q}, {b}]", f"{y3}[{a}, {q}, {b}]"
    k.line(f"{s} = 0.0")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {s} += {g}" + ("" if log else f" * {y}"))
    val = f"({g} - math.exp({y}) * {s}) * {it}" if log else f"{y} * ({g} - {s}) * {it}"
    k.line(f"for {q} in range({y3}.shape[1]):")
    k.line(f"    {d3}[{a}, {q}, {b}] = {val} if {q} < {n} else 0.0")
    k.indent -= 2


def _softmax_views(k, node, arrays: list[str], like: str) -> tuple[str, list[str]]:
    """("2d", row views) when the axis is the last one and no length is used, else ("3d",
    (A, K, B) views)."""
    nd = len(k.info[like].shape)
    ax = node.params["axis"] % nd
    if ax == nd - 1 and not node.params["use_length"]:
        return "2d", [rows_view(k, a) for a in arrays]
    return "3d", [axis_view3(k, a, ax, nd) for a in arrays]


def _softmax_lower(log: bool):
    fn = "log_softmax_forward" if log else "softmax_forward"

    def lower(k, node, ins, outs):
        layout, (x, o) = _softmax_views(k, node, [ins[0], outs[0]], ins[0])
        if node.params["use_length"]:
            _emit_length_forward(k, node, x, o, ins[1], log)
            return
        t = node.params["temperature"]
        call(k, "softmax", fn + ("_3d" if layout == "3d" else ""), x, o, repr(1.0 if t is None else t))
    return lower


def _softmax_backward_lower(log: bool):
    fn = "log_softmax_backward" if log else "softmax_backward"

    def lower(k, node, ins, outs):
        layout, (g, y, d) = _softmax_views(k, node, [ins[0], ins[1], outs[0]], ins[1])
        if node.params["use_length"]:
            _emit_length_backward(k, node, g, y, d, ins[2], log)
            return
        t = node.params["temperature"]
        call(k, "softmax", fn + ("_3d" if layout == "3d" else ""), g, y, d, repr(1.0 if t is None else t))
    return lower


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


def _softmax_op(name: str, log: bool, doc: str) -> OpDef:
    op = register(OpDef(
        name=name,
        params=_softmax_params(),
        arguments=_softmax_args,
        shape=_softmax_shape,
        dtype=_softmax_dtype,
        kind=Kind.OPAQUE,
        grad=_softmax_grad(f"_backward_{name}"),
        lower={"cpu": _softmax_lower(log)},
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
        lower={"cpu": _softmax_backward_lower(log)},
        extra={"backward_of": name},
        doc=f"{name}'s gradient from the head gradient and its output (output's dtype).",
    ))
    return op


softmax = _softmax_op("softmax", False,
                      "``exp(x / t) / sum(exp(x / t), axis)`` along ``axis`` (t = temperature).")
log_softmax = _softmax_op("log_softmax", True,
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


_REG_CODES = {"LinearRegressionOutput": 0, "LogisticRegressionOutput": 1,   # kernels' REG_*
              "MAERegressionOutput": 2}


def _reg_lower_cpu(k, node, ins, outs):
    call(k, "softmax", "regression_forward", view2d(k, ins[0]), view2d(k, outs[0]),
         _REG_CODES[node.op.name])


def _reg_grad(b, node, ograds):
    """The head's own gradient from its output and the label (head gradients are ignored)."""
    dx = b.add(f"_backward_{node.op.name}", [node.outputs[0], node.inputs[1]], params=node.params)[0]
    return [dx, None]


def _reg_backward_lower_cpu(k, node, ins, outs):
    out, label = ins
    o2, lab, dx = view2d(k, out), k.tmp("l"), view2d(k, outs[0])
    k.line(f"{lab} = {label}.reshape({o2}.shape[0], {o2}.shape[1])")
    call(k, "softmax", "regression_backward", o2, lab, dx, repr(node.params["grad_scale"]),
         _REG_CODES[node.op.extra["backward_of"]])


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
        lower={"cpu": _reg_lower_cpu},
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
        lower={"cpu": _reg_backward_lower_cpu},
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


def _makeloss_scale(k, node, x: str, xf: str) -> str:
    """Emit the gradient value: grad_scale / (1, batch size, or count of x > valid_thresh)."""
    p = node.params
    gs, scale = repr(p["grad_scale"]), k.tmp("s")
    if p["normalization"] == "batch":
        n = f"{x}.shape[0]" if k.info[x].shape else "1"
        k.line(f"{scale} = {gs} / max({n}, 1)")
    elif p["normalization"] == "valid":
        cnt, i = k.tmp("c"), k.tmp("i")
        k.line(f"{cnt} = 0")
        k.line(f"for {i} in range({xf}.shape[0]):")
        k.line(f"    if {xf}[{i}] > {p['valid_thresh']!r}:")
        k.line(f"        {cnt} += 1")
        k.line(f"{scale} = {gs} / max({cnt}, 1)")
    else:
        k.line(f"{scale} = {gs}")
    return scale


def _makeloss_backward_lower_cpu(k, node, ins, outs):
    xf, df, i = k.tmp("x"), k.tmp("d"), k.tmp("i")
    k.line(f"{xf} = {ins[0]}.reshape(-1)")
    k.line(f"{df} = {outs[0]}.reshape(-1)")
    scale = _makeloss_scale(k, node, ins[0], xf)
    k.line(f"for {i} in range({df}.shape[0]):")
    k.line(f"    {df}[{i}] = {scale}")


MakeLoss = register(OpDef(
    name="MakeLoss",
    params=(
        Param("grad_scale", "float", 1.0, doc="the head gradient"),
        Param("valid_thresh", "float", 0.0, doc="with normalization='valid', entries above it count"),
        Param("normalization", "str", "null", choices=_NORMALIZATIONS,
              doc="divide the gradient by 1, the batch size or the count of valid entries"),
    ),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    body=_identity_body,
    inplace=((0, 0),),
    loss=True,
    grad=_makeloss_grad,
    doc="Marks data as a loss: forward outputs data; the gradient is grad_scale everywhere, divided "
        "by 1 ('null'), data.shape[0] ('batch') or the count of entries > valid_thresh ('valid', "
        "at least 1). Head gradients are ignored.",
))

register(OpDef(
    name="_backward_MakeLoss",
    params=MakeLoss.params,
    shape=_unary_shape,
    kind=Kind.OPAQUE,
    lower={"cpu": _makeloss_backward_lower_cpu},
    extra={"backward_of": "MakeLoss"},
    doc="MakeLoss's gradient: a constant array of data's shape.",
))

BlockGrad = register(OpDef(
    name="BlockGrad",
    aliases=("stop_gradient",),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    body=_identity_body,
    inplace=((0, 0),),
    grad=lambda b, node, ograds: [None],
    doc="Identity forward; no gradient flows back to data (its gradient is zero).",
))
