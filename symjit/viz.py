"""``mx.viz``: draw a symbol as a Graphviz graph, or print it as a layer table.

Follows MXNet 1.x's ``mxnet.visualization``. The graph is read from ``symbol.tojson()`` (nodes and
their inputs), and shapes/dtypes come from symjit's inference over ``symbol.get_internals()``.

>>> import symjit as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=10, name='fc')
>>> dot = mx.viz.plot_network(net, shape={'data': (2, 5)})
>>> 'FullyConnected\\\\n10' in dot.source
True
"""
from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

from .base import MXNetError, ParamError, ShapeError, dtype_name

__all__ = ["plot_network", "print_summary"]

# MXNet's palette: variables, conv/fc, activations, batchnorm, pooling, reshaping, softmax, other.
_PALETTE = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
_FAMILY_COLOUR = {
    "Convolution": 1, "Deconvolution": 1, "FullyConnected": 1,
    "Activation": 2, "LeakyReLU": 2,
    "BatchNorm": 3,
    "Pooling": 4,
    "Concat": 5, "Flatten": 5, "Reshape": 5,
    "Softmax": 6, "SoftmaxOutput": 6, "SoftmaxActivation": 6, "softmax": 6,
}
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
_DEFAULT_NODE_ATTRS = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                       "style": "filled"}


class VizTypeError(MXNetError, TypeError):
    """An argument of ``plot_network``/``print_summary`` of the wrong type."""


# ------------------------------------------------------------------------------------------------
# graph reading


def _looks_like_weight(name: str) -> bool:
    return name.endswith(_WEIGHT_SUFFIXES)


def _check_symbol(func: str, symbol: Any) -> dict:
    from .symbol import Symbol
    if not isinstance(symbol, Symbol):
        raise VizTypeError(f"{func}: argument 'symbol' must be a Symbol, got {type(symbol).__name__}")
    return json.loads(symbol.tojson())


def _check_dict(func: str, arg: str, value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VizTypeError(f"{func}: argument '{arg}' must be a dict of input name -> value, "
                           f"got {type(value).__name__}")
    return value


def _output_keys(graph: dict, names: list[str]) -> dict[tuple[int, int], str]:
    """(node index, output index) -> the name ``get_internals().list_outputs()`` gives it.

    Internals list each node's visible outputs in graph order, the order of the JSON nodes.
    """
    nodes, row_ptr = graph["nodes"], graph["node_row_ptr"]
    keys: dict[tuple[int, int], str] = {}
    cur = 0
    for nid, node in enumerate(nodes):
        if node["op"] == "null":
            if cur < len(names) and names[cur] == node["name"]:
                keys[(nid, 0)] = names[cur]
                cur += 1
            continue
        nxt = nodes[nid + 1] if nid + 1 < len(nodes) else None
        total = row_ptr[nid + 1] - row_ptr[nid]
        for idx in range(total):
            if cur >= len(names) or not names[cur].startswith(node["name"] + "_"):
                break
            if nxt is not None and nxt["op"] == "null" and names[cur] == nxt["name"]:
                break
            keys[(nid, idx)] = names[cur]
            cur += 1
    return keys


def _infer(func: str, symbol: Any, graph: dict, shape: dict | None, dtype: dict | None
           ) -> tuple[dict, dict]:
    """Shapes and dtypes per (node, output), from inference over the internals."""
    internals = symbol.get_internals()
    keys = _output_keys(graph, internals.list_outputs())
    shapes: dict[tuple[int, int], tuple[int, ...]] = {}
    dtypes: dict[tuple[int, int], Any] = {}
    if shape is not None:
        _, out_shapes, _ = internals.infer_shape(**shape)
        if out_shapes is None:
            raise ShapeError(f"{func}: input shapes {shape} are incomplete: cannot infer every "
                             f"tensor's shape (give the shape of every data input)")
        by_name = dict(zip(internals.list_outputs(), out_shapes))
        shapes = {k: tuple(by_name[n]) for k, n in keys.items()}
    if dtype is not None:
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise MXNetError(f"{func}: input dtypes {dtype} are incomplete: cannot infer every "
                             f"tensor's dtype")
        by_name = dict(zip(internals.list_outputs(), out_types))
        dtypes = {k: by_name[n] for k, n in keys.items()}
    return shapes, dtypes


def _dims(text: str | None, default: str, ndim: int) -> str:
    """``'(5, 5)'`` -> ``'5x5'``; missing -> ``default`` repeated ``ndim`` times."""
    if text is None:
        return "x".join([default] * ndim)
    return "x".join(re.findall(r"\d+", text))


def _label(node: dict) -> str:
    """MXNet's node label: the op name, then its key parameters on a second line."""
    op, attrs = node["op"], node.get("attrs", {})
    if op == "null":
        return node["name"]
    if op in ("Convolution", "Deconvolution"):
        kernel = _dims(attrs.get("kernel"), "1", 1)
        stride = _dims(attrs.get("stride"), "1", kernel.count("x") + 1)
        return rf"{op}\n{kernel}/{stride}, {attrs.get('num_filter', '?')}"
    if op == "FullyConnected":
        return rf"FullyConnected\n{attrs.get('num_hidden', '?')}"
    if op in ("Activation", "LeakyReLU"):
        default = "leaky" if op == "LeakyReLU" else "?"
        return rf"{op}\n{attrs.get('act_type', default)}"
    if op == "Pooling":
        pool_type = attrs.get("pool_type", "max")
        if attrs.get("global_pool", "False") in ("True", "true", "1"):
            return rf"Pooling\n{pool_type}, global"
        kernel = _dims(attrs.get("kernel"), "1", 1)
        stride = _dims(attrs.get("stride"), "1", kernel.count("x") + 1)
        return rf"Pooling\n{pool_type}, {kernel}/{stride}"
    return op


def _fill_colour(op: str) -> str:
    if op == "null":
        return _PALETTE[0]
    return _PALETTE[_FAMILY_COLOUR.get(op, 7)]


# ------------------------------------------------------------------------------------------------
# plot_network


def _edge_label(key: tuple[int, int], shapes: dict, dtypes: dict) -> str:
    label = ""
    if key in shapes:
        label = "x".join(str(d) for d in shapes[key][1:])
    if key in dtypes:
        label += f"({dtype_name(dtypes[key])})"
    return label


def _warn_repeated_names(nodes: list[dict]) -> None:
    """One warning naming the nodes that share a name: the picture draws one box per name, so
    they merge (and may make the drawn graph cyclic)."""
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node["name"]] = counts.get(node["name"], 0) + 1
    repeated = [name for name, n in counts.items() if n > 1]
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph; their boxes "
                      f"merge in the picture, which may show a cycle: {', '.join(repeated)}", stacklevel=3)


def plot_network(symbol: Any, title: str = "plot", save_format: str = "pdf",
                 shape: dict | None = None, dtype: dict | None = None,
                 node_attrs: dict | None = None, hide_weights: bool = True) -> Any:
    """Draw ``symbol``'s computation graph as a ``graphviz.Digraph``, as MXNet 1.x does.

    One box per operator and per input variable (with ``hide_weights``, variables named
    ``*_weight``, ``*_bias``, ``*_gamma``, ``*_beta``, ``*_moving_mean``, ``*_moving_var``,
    ``*_running_mean``, ``*_running_var`` are left out), coloured by op family. Edges run from each
    input to its consumer (written consumer -> input with ``dir=back``, so the network reads upwards
    like MXNet's pictures). With ``shape`` (input name -> shape) each edge is labelled with its
    tensor's shape without the batch dimension (``"128"``, ``"20x24x24"``); with ``dtype`` (input
    name -> dtype) the dtype follows in parentheses.

    >>> import symjit as mx
    >>> net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=8,
    ...                         name='fc'), act_type='relu', name='relu')
    >>> src = mx.viz.plot_network(net, shape={'data': (4, 3)}).source
    >>> 'fc_weight' in src, 'relu -> fc' in src, 'label=8' in src
    (False, True, True)
    """
    try:
        from graphviz import Digraph
    except ImportError as exc:  # pragma: no cover - graphviz is a dependency
        raise ImportError("plot_network: the python package 'graphviz' is required") from exc
    func = "plot_network"
    graph = _check_symbol(func, symbol)
    shape = _check_dict(func, "shape", shape) if shape is not None else None
    dtype = _check_dict(func, "dtype", dtype) if dtype is not None else None
    attrs_base = dict(_DEFAULT_NODE_ATTRS)
    attrs_base.update({str(k): str(v) for k, v in _check_dict(func, "node_attrs", node_attrs).items()})
    shapes, dtypes = _infer(func, symbol, graph, shape, dtype)

    dot = Digraph(name=title, format=save_format)
    nodes = graph["nodes"]
    _warn_repeated_names(nodes)
    hidden: set[int] = set()
    for nid, node in enumerate(nodes):
        if node["op"] == "null" and hide_weights and _looks_like_weight(node["name"]):
            hidden.add(nid)
            continue
        dot.node(name=node["name"], label=_label(node), fillcolor=_fill_colour(node["op"]), **attrs_base)
    for node in nodes:
        if node["op"] == "null":
            continue
        for src, idx, *_ in node["inputs"]:
            if src in hidden:
                continue
            label = _edge_label((src, idx), shapes, dtypes)
            dot.edge(tail_name=node["name"], head_name=nodes[src]["name"], label=label,
                     dir="back", arrowtail="open")
    return dot


# ------------------------------------------------------------------------------------------------
# print_summary


def _roles(graph: dict, shape: dict | None, aux: set[str]) -> dict[int, str]:
    """Each variable's role: 'input' (a row of the table), 'param' (counted) or 'skip'."""
    roles: dict[int, str] = {}
    for nid, node in enumerate(graph["nodes"]):
        if node["op"] != "null":
            continue
        name = node["name"]
        if name in aux:
            roles[nid] = "skip"
        elif _looks_like_weight(name):
            roles[nid] = "param"
        elif name.endswith("label"):
            roles[nid] = "skip"
        elif shape is None or name in shape or nid == 0:
            roles[nid] = "input"
        else:
            roles[nid] = "param"
    return roles


def _print_row(fields: Sequence[Any], positions: Sequence[int]) -> None:
    line = ""
    for field, pos in zip(fields, positions):
        line = (line + str(field))[:pos]
        line += " " * (pos - len(line))
    print(line)


def _shape_text(shapes: dict, nid: int, n_out: int) -> str:
    parts = ["x".join(str(d) for d in shapes[(nid, i)][1:]) for i in range(n_out) if (nid, i) in shapes]
    return ", ".join(parts)


def _layer_rows(graph: dict, roles: dict[int, str], shapes: dict) -> list[tuple[list, int | None]]:
    """``([name(type), output shape, param count, previous layers...], count)`` per table row."""
    nodes, row_ptr = graph["nodes"], graph["node_row_ptr"]
    counted: set[int] = set()
    rows: list[tuple[list, int | None]] = []
    for nid, node in enumerate(nodes):
        op = node["op"]
        if op == "null" and roles[nid] != "input":
            continue
        n_out = row_ptr[nid + 1] - row_ptr[nid]
        count: int | None = 0
        previous: list[str] = []
        for src, _, *_ in node["inputs"]:
            if nodes[src]["op"] != "null" or roles[src] == "input":
                previous.append(nodes[src]["name"])
            elif roles[src] == "param" and src not in counted and count is not None:
                counted.add(src)
                count = count + math.prod(shapes[(src, 0)]) if (src, 0) in shapes else None
        text = _shape_text(shapes, nid, n_out)
        rows.append(([f"{node['name']}({op})", text, "" if count is None else count, *previous], count))
    return rows


def print_summary(symbol: Any, shape: dict | None = None, line_length: int = 120,
                  positions: Sequence[float] = (.44, .64, .74, 1.)) -> None:
    """Print ``symbol`` as MXNet 1.x's layer table: Layer (type), Output Shape, Param #, Previous Layer.

    One row per operator and per data input (weights, aux states and ``*label`` variables are not
    rows), output shapes without the batch dimension, then ``Total params: N``. ``positions`` are
    the columns' right edges, as fractions of ``line_length`` (or absolute when the last is > 1).
    Param # is the number of elements of the layer's parameter variables (aux states such as
    BatchNorm's moving mean/var are not counted; a shared parameter counts once, at its first
    layer). Without ``shape`` the shapes and counts are unknown and left blank.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=10, name='fc')
    >>> mx.viz.print_summary(net, shape={'data': (1, 5)}, line_length=80)  # doctest: +NORMALIZE_WHITESPACE
    ________________________________________________________________________________
    Layer (type)                       Output Shape    Param # Previous Layer
    ================================================================================
    data(null)                         5               0
    ________________________________________________________________________________
    fc(FullyConnected)                 10              60      data
    ================================================================================
    Total params: 60
    ________________________________________________________________________________
    """
    func = "print_summary"
    graph = _check_symbol(func, symbol)
    shape = _check_dict(func, "shape", shape) if shape is not None else None
    if len(positions) != 4:
        raise ParamError(f"{func}: argument 'positions' needs 4 column edges, got {list(positions)}")
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    shapes, _ = _infer(func, symbol, graph, shape, None)
    rows = _layer_rows(graph, _roles(graph, shape, set(symbol.list_auxiliary_states())), shapes)

    print("_" * line_length)
    _print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions)
    print("=" * line_length)
    total: int | None = 0
    for i, (fields, count) in enumerate(rows):
        _print_row(fields[:4], positions)
        for extra in fields[4:]:
            _print_row(["", "", "", extra], positions)
        print(("=" if i == len(rows) - 1 else "_") * line_length)
        total = None if total is None or count is None else total + count
    print(f"Total params: {'unknown (give shape= to count)' if total is None else total}")
    print("_" * line_length)
