"""Symbol + parameters -> an ONNX model (opset 13), with the ``onnx`` package.

The symbol's JSON is walked in order; each operator becomes the ONNX nodes of its rule in
:data:`EXPORTERS` (parameters parsed by the operator's registry record, so defaults are
symjit's/MXNet's), parameters become initializers, the arguments without a value become the
graph's inputs with the given shapes. Loss heads export their inference output (``SoftmaxOutput``
-> ``Softmax``; its label input is dropped). An operator without a rule is a clear error naming it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError
from ..ops.registry import get_op

__all__ = ["export_model", "EXPORTERS", "OPSET"]

OPSET = 13


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise MXNetError("mx.onnx needs the onnx package: pip install 'symjit[onnx]'") from exc
    return onnx


class Ctx:
    """What an exporter rule sees: the node, its parsed params, input and output tensor names and
    shapes; ``add`` appends an ONNX node, ``const`` an initializer."""

    def __init__(self, onnx: Any, nodes: list, inits: list, node: dict, params: dict, inputs: list[str],
                 in_shapes: list, outputs: list[str], out_shapes: list, param_values: dict):
        self.onnx, self._nodes, self._inits = onnx, nodes, inits
        self.name, self.op, self.params = node["name"], node["op"], params
        self.inputs, self.in_shapes, self.outputs, self.out_shapes = inputs, in_shapes, outputs, out_shapes
        self.param_values = param_values

    def add(self, op_type: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> str:
        outs = outputs or [f"{self.name}__{op_type.lower()}{len(self._nodes)}"]
        self._nodes.append(self.onnx.helper.make_node(op_type, inputs, outs, name=f"{self.name}/{op_type}"
                                                      f"{len(self._nodes)}", **attrs))
        return outs[0]

    def const(self, suffix: str, value: np.ndarray) -> str:
        name = f"{self.name}__{suffix}"
        self._inits.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name


def _pairs(v: tuple, n: int, default: int) -> list[int]:
    return list(v) if v else [default] * n


def _fc(c: Ctx) -> None:
    x = c.inputs[0]
    if c.params["flatten"] and len(c.in_shapes[0]) > 2:
        x = c.add("Flatten", [x], axis=1)
    elif not c.params["flatten"] and len(c.in_shapes[0]) > 2:
        raise MXNetError(f"FullyConnected '{c.name}': flatten=False on {len(c.in_shapes[0])}-D data has no "
                         "ONNX export yet")
    args = [x, c.inputs[1]] + ([] if c.params["no_bias"] else [c.inputs[2]])
    c.add("Gemm", args, c.outputs, transB=1)


def _conv(c: Ctx) -> None:
    p = c.params
    nd = len(p["kernel"])
    pad = _pairs(p["pad"], nd, 0)
    args = c.inputs[:2] + ([] if p["no_bias"] else [c.inputs[2]])
    c.add("Conv", args, c.outputs, kernel_shape=list(p["kernel"]), strides=_pairs(p["stride"], nd, 1),
          dilations=_pairs(p["dilate"], nd, 1), pads=pad + pad, group=int(p["num_group"]))


_ACT = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus", "softsign": "Softsign"}


def _activation(c: Ctx) -> None:
    act = c.params["act_type"]
    if act not in _ACT:
        raise MXNetError(f"Activation '{c.name}': act_type {act!r} has no ONNX export")
    c.add(_ACT[act], c.inputs[:1], c.outputs)


def _unary(op_type: str) -> Callable[[Ctx], None]:
    return lambda c: c.add(op_type, c.inputs[:1], c.outputs)


def _leaky(c: Ctx) -> None:
    act, slope = c.params["act_type"], float(c.params["slope"])
    if act == "leaky":
        c.add("LeakyRelu", c.inputs[:1], c.outputs, alpha=slope)
    elif act == "elu":
        c.add("Elu", c.inputs[:1], c.outputs, alpha=slope)
    else:
        raise MXNetError(f"LeakyReLU '{c.name}': act_type {act!r} has no ONNX export")


def _pool(c: Ctx) -> None:
    p = c.params
    kind = p["pool_type"]
    if kind not in ("max", "avg"):
        raise MXNetError(f"Pooling '{c.name}': pool_type {kind!r} has no ONNX export")
    if p["global_pool"]:
        c.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", c.inputs[:1], c.outputs)
        return
    nd = len(p["kernel"])
    pad = _pairs(p["pad"], nd, 0)
    attrs = dict(kernel_shape=list(p["kernel"]), strides=_pairs(p["stride"], nd, 1), pads=pad + pad,
                 ceil_mode=int(p["pooling_convention"] == "full"))
    if kind == "avg":
        attrs["count_include_pad"] = int(p["count_include_pad"] is not False)
        c.add("AveragePool", c.inputs[:1], c.outputs, **attrs)
    else:
        c.add("MaxPool", c.inputs[:1], c.outputs, **attrs)


def _batchnorm(c: Ctx) -> None:
    p = c.params
    if p["axis"] != 1:
        raise MXNetError(f"BatchNorm '{c.name}': axis {p['axis']} has no ONNX export (channels must be "
                         "axis 1)")
    gamma = c.inputs[1]
    if p["fix_gamma"]:   # gamma is treated as 1
        gamma = c.const("ones", np.ones(c.in_shapes[1], dtype=np.float32))
    c.add("BatchNormalization", [c.inputs[0], gamma, c.inputs[2], c.inputs[3], c.inputs[4]], c.outputs[:1],
          epsilon=float(p["eps"]), momentum=float(p["momentum"]))


def _softmax(c: Ctx) -> None:
    axis = int(c.params.get("axis", -1)) if c.op in ("softmax", "log_softmax") else -1
    if c.op == "SoftmaxOutput" and (c.params["multi_output"] or c.params["preserve_shape"]):
        axis = 1 if c.params["multi_output"] else -1
    c.add("LogSoftmax" if c.op == "log_softmax" else "Softmax", c.inputs[:1], c.outputs[:1], axis=axis)


def _binary(op_type: str) -> Callable[[Ctx], None]:
    return lambda c: c.add(op_type, c.inputs[:2], c.outputs)


def _scalar(op_type: str, reverse: bool = False) -> Callable[[Ctx], None]:
    def rule(c: Ctx) -> None:
        s = c.const("scalar", np.array(float(c.params["scalar"]), dtype=np.float32))
        c.add(op_type, [s, c.inputs[0]] if reverse else [c.inputs[0], s], c.outputs)
    return rule


def _reshape(c: Ctx) -> None:
    shape = c.const("shape", np.array(c.out_shapes[0], dtype=np.int64))
    c.add("Reshape", [c.inputs[0], shape], c.outputs)


def _concat(c: Ctx) -> None:
    c.add("Concat", c.inputs, c.outputs, axis=int(c.params["dim"]))


def _transpose(c: Ctx) -> None:
    axes = list(c.params["axes"]) or list(range(len(c.in_shapes[0])))[::-1]
    c.add("Transpose", c.inputs[:1], c.outputs, perm=axes)


def _clip(c: Ctx) -> None:
    lo = c.const("min", np.array(float(c.params["a_min"]), dtype=np.float32))
    hi = c.const("max", np.array(float(c.params["a_max"]), dtype=np.float32))
    c.add("Clip", [c.inputs[0], lo, hi], c.outputs)


def _identity(c: Ctx) -> None:
    c.add("Identity", c.inputs[:1], c.outputs[:1])


EXPORTERS: dict[str, Callable[[Ctx], None]] = {
    "FullyConnected": _fc, "Convolution": _conv, "Activation": _activation, "LeakyReLU": _leaky,
    "relu": _unary("Relu"), "sigmoid": _unary("Sigmoid"), "tanh": _unary("Tanh"), "exp": _unary("Exp"),
    "log": _unary("Log"), "sqrt": _unary("Sqrt"), "abs": _unary("Abs"), "negative": _unary("Neg"),
    "Pooling": _pool, "BatchNorm": _batchnorm, "Flatten": _unary("Flatten"), "flatten": _unary("Flatten"),
    "SoftmaxOutput": _softmax, "softmax": _softmax, "log_softmax": _softmax, "SoftmaxActivation": _softmax,
    "LinearRegressionOutput": _identity, "LogisticRegressionOutput": _unary("Sigmoid"),
    "elemwise_add": _binary("Add"), "_plus": _binary("Add"), "_Plus": _binary("Add"),
    "broadcast_add": _binary("Add"), "elemwise_sub": _binary("Sub"), "_minus": _binary("Sub"),
    "broadcast_sub": _binary("Sub"), "elemwise_mul": _binary("Mul"), "_mul": _binary("Mul"),
    "broadcast_mul": _binary("Mul"), "elemwise_div": _binary("Div"), "_div": _binary("Div"),
    "broadcast_div": _binary("Div"), "_plus_scalar": _scalar("Add"), "_minus_scalar": _scalar("Sub"),
    "_rminus_scalar": _scalar("Sub", True), "_mul_scalar": _scalar("Mul"), "_div_scalar": _scalar("Div"),
    "_rdiv_scalar": _scalar("Div", True), "Reshape": _reshape, "reshape": _reshape, "Concat": _concat,
    "concat": _concat, "transpose": _transpose, "clip": _clip, "Dropout": _identity, "BlockGrad": _identity,
    "stop_gradient": _identity, "_copy": _identity, "identity": _identity,
}


def _load(sym: Any, params: Any) -> tuple[Any, dict]:
    from .. import ndarray as nd
    from ..symbol import Symbol
    from ..symbol import load as load_symbol
    if isinstance(sym, str):
        sym = load_symbol(sym)
    if not isinstance(sym, Symbol):
        raise ParamError(f"export_model: sym must be a Symbol or a symbol file, got {type(sym).__name__}")
    if isinstance(params, str):
        params = nd.load(params)
    if not isinstance(params, dict):
        raise ParamError(f"export_model: params must be a dict or a .params file, got "
                         f"{type(params).__name__}")
    values = {}
    for k, v in params.items():
        name = k.split(":", 1)[1] if k.startswith(("arg:", "aux:")) else k
        values[name] = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
    return sym, values


def export_model(sym: Any, params: Any, in_shapes: Any = None, in_types: Any = np.float32,
                 onnx_file_path: str = "model.onnx", verbose: bool = False, input_shape: Any = None,
                 input_type: Any = None, **kwargs: Any) -> str:
    """Write ``sym`` with ``params`` (a dict, ``arg:``/``aux:`` keys allowed, or a ``.params`` file)
    as an ONNX model; ``in_shapes`` (MXNet 1.9's name; ``input_shape`` the older one) lists the
    shapes of the symbol's inputs that are not parameters, in argument order; ``in_types`` their
    dtypes, one for all or a list with one per input. Returns the path.

    >>> import os, tempfile, numpy as np, symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> p = {'fc_weight': mx.nd.ones((2, 3)), 'fc_bias': mx.nd.zeros((2,))}
    >>> path = export_model(net, p, [(1, 3)], onnx_file_path=os.path.join(tempfile.mkdtemp(), 'fc.onnx'))
    >>> import onnx; [n.op_type for n in onnx.load(path).graph.node]
    ['Gemm']
    """
    onnx = _onnx()
    sym, values = _load(sym, params)
    shapes = in_shapes if in_shapes is not None else input_shape
    doc = json.loads(sym.tojson())
    nodes_json, heads = doc["nodes"], doc["heads"]
    args = sym.list_arguments() + sym.list_auxiliary_states()
    labels = {n for n in args if n.endswith("label")}
    data = [n for n in sym.list_arguments() if n not in values and n not in labels]
    if shapes is None or len(list(shapes)) != len(data):
        raise ParamError(f"export_model: give one shape per input {data} (in_shapes), got {shapes!r}")
    given = dict(zip(data, [tuple(int(d) for d in s) for s in shapes]))
    internals = sym.get_internals()
    arg_s, out_s, aux_s = internals.infer_shape_partial(**given)
    out_shape = dict(zip(internals.list_outputs(), out_s))
    var_shape = dict(zip(internals.list_arguments(), arg_s))
    var_shape.update(zip(internals.list_auxiliary_states(), aux_s))
    onodes: list = []
    inits: list = []

    def tensor(entry: list) -> str:
        src = nodes_json[entry[0]]
        if src["op"] == "null":
            return src["name"]
        return src["name"] if entry[1] == 0 else f"{src['name']}_output{entry[1]}"

    def shape_of(entry: list) -> tuple:
        src = nodes_json[entry[0]]
        if src["op"] == "null":
            return tuple(var_shape.get(src["name"]) or ())
        key = f"{src['name']}_output" if entry[1] == 0 and f"{src['name']}_output" in out_shape \
            else f"{src['name']}_output{entry[1]}"
        return tuple(out_shape.get(key) or ())

    used: set[str] = set()
    for idx, node in enumerate(nodes_json):
        if node["op"] == "null":
            continue
        rule = EXPORTERS.get(node["op"])
        if rule is None:
            raise MXNetError(f"export_model: operator {node['op']} ('{node['name']}') has no ONNX export; "
                             f"exported operators: {', '.join(sorted(EXPORTERS))}")
        params = get_op(node["op"]).parse_params(dict(node.get("attrs", {})))
        ins = [e for e in node["inputs"] if not (nodes_json[e[0]]["op"] == "null"
                                                  and nodes_json[e[0]]["name"] in labels)]
        n_out = max([e[1] for e in heads if e[0] == idx] + [0]) + 1
        outs = [node["name"] if i == 0 else f"{node['name']}_output{i}" for i in range(n_out)]
        ctx = Ctx(onnx, onodes, inits, node, params, [tensor(e) for e in ins], [shape_of(e) for e in ins],
                  outs, [shape_of([idx, i]) for i in range(n_out)], values)
        rule(ctx)
        used.update(tensor(e) for e in ins)
    types = input_type if input_type is not None else in_types
    types = list(types) if isinstance(types, (list, tuple)) else [types] * len(data)
    if len(types) != len(data):
        raise ParamError(f"export_model: in_types has {len(types)} types for the {len(data)} inputs {data}")
    try:
        dtypes = [onnx.helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in types]
    except (TypeError, KeyError) as exc:
        raise ParamError(f"export_model: in_types {types!r} are not numpy dtypes ONNX has") from exc
    inputs = [onnx.helper.make_tensor_value_info(n, t, list(given[n])) for n, t in zip(data, dtypes)]
    for name, value in values.items():
        if name in used:
            inits.append(onnx.numpy_helper.from_array(value.astype(np.float32)
                                                      if value.dtype.kind == "f" else value, name))
    outputs = [onnx.helper.make_tensor_value_info(tensor(h), onnx.TensorProto.FLOAT, list(shape_of(h)))
               for h in heads]
    graph = onnx.helper.make_graph(onodes, "symjit", inputs, outputs, inits)
    model = onnx.helper.make_model(graph, producer_name="symjit",
                                   opset_imports=[onnx.helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, onnx_file_path)
    if verbose:
        print(onnx.helper.printable_graph(graph))
    return onnx_file_path
