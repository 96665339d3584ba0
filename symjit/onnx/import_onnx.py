"""An ONNX model -> ``(Symbol, arg_params, aux_params)``, as MXNet 1.x's ``import_model``.

The file is parsed by the ``onnx`` package (protobuf; nothing in it is executed). Initializers and
``Constant`` nodes become parameters; the graph inputs without an initializer become the
symbol's data Variables (named as in the model); each node becomes symbols by the rule of its
``op_type`` in :data:`IMPORTERS`. An operator without a rule, or an attribute the rule cannot
honour (asymmetric pads, ``auto_pad``), is a clear error naming the node.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError

__all__ = ["import_model", "get_model_metadata", "IMPORTERS"]


def _onnx() -> Any:
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise MXNetError("mx.onnx needs the onnx package: pip install 'symjit[onnx]'") from exc
    return onnx, numpy_helper


class Graph:
    """The import state: symbols of tensor names, constant values, and the parameters used."""

    def __init__(self, consts: dict[str, np.ndarray]):
        from .. import symbol as sym
        self.sym = sym
        self.consts = consts
        self.tensors: dict[str, Any] = {}
        self.used: dict[str, np.ndarray] = {}
        self.aux: set[str] = set()

    def get(self, name: str) -> Any:
        """The symbol of tensor ``name`` (a parameter Variable for a constant)."""
        if name in self.tensors:
            return self.tensors[name]
        if name in self.consts:
            if self.consts[name].ndim == 0:    # symjit has no 0-d arrays: a scalar broadcasts as (1,)
                self.consts[name] = self.consts[name].reshape(1)
            self.used[name] = self.consts[name]
            self.tensors[name] = self.sym.Variable(name, shape=self.consts[name].shape)
            return self.tensors[name]
        raise MXNetError(f"import_model: tensor {name!r} is used before it is produced")

    def const(self, name: str, node: Any) -> np.ndarray:
        if name not in self.consts:
            raise MXNetError(f"import_model: {node.op_type} '{node.name}': input {name!r} must be a constant")
        return self.consts[name]


def _attrs(node: Any, onnx: Any) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _sym_pads(node: Any, a: dict, n: int) -> tuple:
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise MXNetError(f"import_model: {node.op_type} '{node.name}': auto_pad is not supported")
    pads = list(a.get("pads", [0] * 2 * n))
    if pads[:n] != pads[n:]:
        raise MXNetError(f"import_model: {node.op_type} '{node.name}': asymmetric pads {pads} are not "
                         "supported")
    return tuple(pads[:n])


def _gemm(g: Graph, node: Any, a: dict) -> Any:
    if a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 or a.get("transA", 0):
        raise MXNetError(f"import_model: Gemm '{node.name}': only alpha=beta=1, transA=0 are supported")
    wname = node.input[1]
    if not a.get("transB", 0):   # FullyConnected wants (out, in): transpose a constant weight
        w = g.const(wname, node).T.copy()
        wname = f"{wname}_T"
        g.consts[wname] = w
    weight = g.get(wname)
    hidden = g.consts[wname].shape[0] if wname in g.consts else None
    if hidden is None:
        raise MXNetError(f"import_model: Gemm '{node.name}': the weight must be a constant")
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    extra = {"bias": g.get(bias)} if bias else {}
    return g.sym.FullyConnected(g.get(node.input[0]), weight=weight, num_hidden=int(hidden),
                                no_bias=bias is None, flatten=True, name=node.name, **extra)


def _conv(g: Graph, node: Any, a: dict) -> Any:
    w = g.const(node.input[1], node)
    n = w.ndim - 2
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    extra = {"bias": g.get(bias)} if bias else {}
    return g.sym.Convolution(g.get(node.input[0]), weight=g.get(node.input[1]), **extra,
                             kernel=tuple(a.get("kernel_shape", w.shape[2:])),
                             stride=tuple(a.get("strides", [1] * n)),
                             dilate=tuple(a.get("dilations", [1] * n)), pad=_sym_pads(node, a, n),
                             num_filter=int(w.shape[0]), num_group=int(a.get("group", 1)),
                             no_bias=bias is None, name=node.name)


def _act(act: str) -> Callable:
    return lambda g, node, a: g.sym.Activation(g.get(node.input[0]), act_type=act, name=node.name)


def _pool(kind: str, global_pool: bool = False) -> Callable:
    def rule(g: Graph, node: Any, a: dict) -> Any:
        x = g.get(node.input[0])
        if global_pool:
            return g.sym.Pooling(x, kernel=(1, 1), pool_type=kind, global_pool=True, name=node.name)
        k = tuple(a["kernel_shape"])
        extra = {"count_include_pad": bool(a.get("count_include_pad", 0))} if kind == "avg" else {}
        if a.get("dilations") and any(d != 1 for d in a["dilations"]):
            raise MXNetError(f"import_model: {node.op_type} '{node.name}': dilated pooling is not supported")
        return g.sym.Pooling(x, kernel=k, pool_type=kind, stride=tuple(a.get("strides", [1] * len(k))),
                             pad=_sym_pads(node, a, len(k)),
                             pooling_convention="full" if a.get("ceil_mode", 0) else "valid", name=node.name,
                             **extra)
    return rule


def _batchnorm(g: Graph, node: Any, a: dict) -> Any:
    for name in node.input[3:5]:
        g.aux.add(name)
    args = [g.get(n) for n in node.input[:5]]
    return g.sym.BatchNorm(*args, eps=float(a.get("epsilon", 1e-5)), momentum=float(a.get("momentum", 0.9)),
                           fix_gamma=False, name=node.name)


def _flatten(g: Graph, node: Any, a: dict) -> Any:
    if a.get("axis", 1) != 1:
        raise MXNetError(f"import_model: Flatten '{node.name}': axis {a['axis']} is not supported (only 1)")
    return g.sym.Flatten(g.get(node.input[0]), name=node.name)


def _softmax(log: bool) -> Callable:
    def rule(g: Graph, node: Any, a: dict) -> Any:
        f = g.sym.log_softmax if log else g.sym.softmax
        return f(g.get(node.input[0]), axis=int(a.get("axis", -1)), name=node.name)
    return rule


def _binary(op: str) -> Callable:
    return lambda g, node, a: getattr(g.sym, op)(g.get(node.input[0]), g.get(node.input[1]), name=node.name)


def _reshape(g: Graph, node: Any, a: dict) -> Any:
    shape = tuple(int(v) for v in g.const(node.input[1], node))
    return g.sym.Reshape(g.get(node.input[0]), shape=shape, name=node.name)


def _clip(g: Graph, node: Any, a: dict) -> Any:
    def bound(i: int, attr: str, default: float) -> float:
        if len(node.input) > i and node.input[i]:
            return float(g.const(node.input[i], node))
        return float(a.get(attr, default))
    return g.sym.clip(g.get(node.input[0]), a_min=bound(1, "min", -3.4e38), a_max=bound(2, "max", 3.4e38),
                      name=node.name)


def _leaky(act: str, default: float) -> Callable:
    return lambda g, n, a: g.sym.LeakyReLU(g.get(n.input[0]), act_type=act, slope=a.get("alpha", default),
                                           name=n.name)


def _unary(op: str) -> Callable:
    return lambda g, n, a: getattr(g.sym, op)(g.get(n.input[0]), name=n.name)


def _concat(g: Graph, node: Any, a: dict) -> Any:
    return g.sym.Concat(*[g.get(i) for i in node.input], dim=int(a["axis"]), name=node.name)


def _transpose(g: Graph, node: Any, a: dict) -> Any:
    return g.sym.transpose(g.get(node.input[0]), axes=tuple(a.get("perm", ())), name=node.name)


def _identity(g: Graph, node: Any, a: dict) -> Any:
    return g.sym.identity(g.get(node.input[0]), name=node.name)


IMPORTERS: dict[str, Callable] = {
    "Gemm": _gemm, "Conv": _conv, "Relu": _act("relu"), "Sigmoid": _act("sigmoid"), "Tanh": _act("tanh"),
    "Softplus": _act("softrelu"), "Softsign": _act("softsign"),
    "LeakyRelu": _leaky("leaky", 0.01), "Elu": _leaky("elu", 1.0),
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"), "GlobalMaxPool": _pool("max", True),
    "GlobalAveragePool": _pool("avg", True), "BatchNormalization": _batchnorm, "Flatten": _flatten,
    "Softmax": _softmax(False), "LogSoftmax": _softmax(True), "Add": _binary("broadcast_add"),
    "Sub": _binary("broadcast_sub"), "Mul": _binary("broadcast_mul"), "Div": _binary("broadcast_div"),
    "MatMul": _binary("dot"), "Reshape": _reshape, "Concat": _concat, "Transpose": _transpose,
    "Clip": _clip, "Identity": _identity, "Dropout": _identity, "Exp": _unary("exp"), "Log": _unary("log"),
    "Sqrt": _unary("sqrt"), "Abs": _unary("abs"), "Neg": _unary("negative"),
}


def _load_model(model_file: Any) -> Any:
    onnx, _ = _onnx()
    if isinstance(model_file, onnx.ModelProto):
        return model_file
    try:
        return onnx.load(model_file)
    except Exception as exc:  # noqa: BLE001 - protobuf raises several kinds for a bad file
        raise MXNetError(f"import_model: cannot read an ONNX model from {model_file!r}: {exc}") from exc


def import_model(model_file: Any) -> tuple[Any, dict, dict]:
    """``(sym, arg_params, aux_params)`` of an ONNX model file (or ``onnx.ModelProto``).

    >>> import numpy as np, onnx
    >>> from onnx import helper, numpy_helper, TensorProto
    >>> w = numpy_helper.from_array(np.ones((2, 3), np.float32), 'w')
    >>> graph = helper.make_graph([helper.make_node('Gemm', ['x', 'w'], ['y'], transB=1)], 'g',
    ...     [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3])],
    ...     [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 2])], [w])
    >>> sym, args, aux = import_model(helper.make_model(graph))
    >>> sym.list_arguments(), sorted(args)
    (['x', 'w'], ['w'])
    """
    from .. import ndarray as nd
    onnx, numpy_helper = _onnx()
    model = _load_model(model_file)
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    g = Graph(consts)
    for inp in model.graph.input:
        if inp.name not in consts:
            g.tensors[inp.name] = g.sym.Variable(inp.name)
    for node in model.graph.node:
        a = _attrs(node, onnx)
        if node.op_type == "Constant":
            g.consts[node.output[0]] = numpy_helper.to_array(a["value"])
            continue
        rule = IMPORTERS.get(node.op_type)
        if rule is None:
            raise MXNetError(f"import_model: ONNX operator {node.op_type} ('{node.name}') is not supported; "
                             f"supported: {', '.join(sorted(IMPORTERS))}")
        if not node.name:
            node.name = f"{node.op_type.lower()}{len(g.tensors)}"
        out = rule(g, node, a)
        outs = list(out) if len(node.output) > 1 else [out]
        for name, s in zip(node.output, outs):
            if name:
                g.tensors[name] = s
    heads = [g.get(o.name) for o in model.graph.output]
    sym = heads[0] if len(heads) == 1 else g.sym.Group(heads)
    args = set(sym.list_arguments())
    arg_params = {n: nd.array(v, dtype=v.dtype) for n, v in g.used.items() if n in args and n not in g.aux}
    aux_params = {n: nd.array(v, dtype=v.dtype) for n, v in g.used.items() if n in g.aux}
    return sym, arg_params, aux_params


def get_model_metadata(model_file: Any) -> dict:
    """``{'input_tensor_data': [(name, shape)], 'output_tensor_data': [(name, shape)]}``."""
    model = _load_model(model_file)
    consts = {t.name for t in model.graph.initializer}

    def shape(v: Any) -> tuple:
        return tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
    if not model.graph.output:
        raise ParamError("get_model_metadata: the model has no outputs")
    return {"input_tensor_data": [(v.name, shape(v)) for v in model.graph.input if v.name not in consts],
            "output_tensor_data": [(v.name, shape(v)) for v in model.graph.output]}
