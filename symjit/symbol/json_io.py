"""Symbol JSON in MXNet 1.x's format: ``Symbol.tojson``, ``mx.sym.load_json`` and ``mx.sym.load``.

The document has five keys::

    nodes         [{"op": "null" | op name, "name": str, "attrs": {str: str}, "inputs": [[i, j, v]]}]
    arg_nodes     indices of the variable nodes (arguments and aux states alike)
    node_row_ptr  prefix sums of every node's output count (hidden outputs included)
    heads         the outputs, [[node, output, version]]
    attrs         {"mxnet_version": ["int", 10901]}

Writing follows MXNet: nodes in graph order, an op's ``attrs`` hold the params the user gave
(as strings) and its user attributes, a variable's ``attrs`` its own attributes (variables an op
created carry a copy of the op's attributes, so ``fc1_weight`` has ``num_hidden``), and an input
read in an aux-state slot (which the op updates) has version 1, 2... as MXNet counts them.

Reading accepts what MXNet 1.x writes, including older files with ``param``/``attr`` instead of
``attrs``, two-element entries and keys such as ``backward_source_id`` (ignored). Every field is
checked; a problem raises :class:`~symjit.base.FormatError` naming the node (index and name) and
what is wrong. Nothing in a file is executed: param strings go through the registry's
``Param.parse`` (``ast.literal_eval`` of literals only). Attributes of an op node that are not
params of the op are kept as user attributes (MXNet does the same).
"""
from __future__ import annotations

import ast
import json
import os
from typing import Any

from ..base import FormatError, MXNetError, np_dtype
from ..ops.registry import OpDef, find_op
from .symbol import Node, Symbol, topo_order

__all__ = ["to_json", "to_dict", "load_json", "load", "MXNET_VERSION"]

MXNET_VERSION = 10901


# ------------------------------------------------------------------------------------------------
# writing


def _input_versions(nodes: list[Node]) -> dict[tuple[int, int], int]:
    """(id(op node), input slot) -> version, for inputs read from variables.

    A variable's version goes up each time an op reads it in an aux-state slot (the op updates it).
    """
    version: dict[int, int] = {}
    out: dict[tuple[int, int], int] = {}
    for node in nodes:
        if node.is_variable:
            continue
        n_args = node.num_args()
        for slot, (src, _) in enumerate(node.inputs):
            if not src.is_variable:
                continue
            if slot >= n_args:
                version[id(src)] = version.get(id(src), 0) + 1
            out[(id(node), slot)] = version.get(id(src), 0)
    return out


def _node_record(node: Node, index: dict[int, int], versions: dict[tuple[int, int], int]) -> dict:
    rec: dict[str, Any] = {"op": "null" if node.is_variable else node.op.name, "name": node.name}
    attrs = node.given_params()
    attrs.update(node.attrs)
    if attrs:
        rec["attrs"] = attrs
    rec["inputs"] = [[index[id(src)], i, versions.get((id(node), slot), 0)]
                     for slot, (src, i) in enumerate(node.inputs)]
    return rec


def to_dict(sym: Symbol) -> dict:
    """The symbol as MXNet 1.x's JSON document (a dict), before serialisation.

    >>> import symjit as mx
    >>> d = to_dict(mx.sym.Activation(mx.sym.Variable('x'), act_type='relu', name='r'))
    >>> d['nodes'][1], d['heads']
    ({'op': 'Activation', 'name': 'r', 'attrs': {'act_type': 'relu'}, 'inputs': [[0, 0, 0]]}, [[1, 0, 0]])
    """
    nodes = topo_order(sym._outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
    versions = _input_versions(nodes)
    row_ptr = [0]
    for n in nodes:
        row_ptr.append(row_ptr[-1] + n.num_outputs)
    return {
        "nodes": [_node_record(n, index, versions) for n in nodes],
        "arg_nodes": [i for i, n in enumerate(nodes) if n.is_variable],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(n)], i, 0] for n, i in sym._outputs],
        "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
    }


def to_json(sym: Symbol) -> str:
    """The symbol in MXNet 1.x's JSON format (what ``Symbol.tojson`` returns)."""
    return json.dumps(to_dict(sym), indent=2)


# ------------------------------------------------------------------------------------------------
# reading


def _where(i: int, rec: Any) -> str:
    name = rec.get("name") if isinstance(rec, dict) else None
    return f"symbol JSON: node {i}" + (f" ('{name}')" if isinstance(name, str) else "")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _attrs_of(rec: dict, where: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for key in ("param", "attr", "attrs"):
        part = rec.get(key)
        if part is None:
            continue
        if not isinstance(part, dict):
            raise FormatError(f"{where}: '{key}' must be an object of strings, got {type(part).__name__}")
        for k, v in part.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise FormatError(f"{where}: attribute {k!r} must be a string, got {v!r}")
            attrs[str(k)] = v if isinstance(v, str) else str(v)
    return attrs


def _entry(e: Any, nodes: list[Node], limit: int, where: str, what: str) -> tuple[Node, int]:
    """Check ``[node, output(, version)]`` against the nodes before ``limit``."""
    if not isinstance(e, list) or len(e) not in (2, 3) or not all(_is_int(x) for x in e):
        raise FormatError(f"{where}: {what} must be [node, output, version] integers, got {e!r}")
    src_i, out_i = e[0], e[1]
    if not 0 <= src_i < limit:
        raise FormatError(f"{where}: {what} refers to node {src_i}, which is not an earlier node "
                          f"(expected 0..{limit - 1})")
    src = nodes[src_i]
    if not 0 <= out_i < src.num_outputs:
        raise FormatError(f"{where}: {what} refers to output {out_i} of node {src_i} ('{src.name}'), "
                          f"which has {src.num_outputs} output(s)")
    if len(e) == 3 and e[2] < 0:
        raise FormatError(f"{where}: {what} has a negative version {e[2]}")
    return src, out_i


def _check_var_attrs(attrs: dict[str, str], where: str) -> None:
    text = attrs.get("__shape__")
    if text is not None:
        try:
            shape = ast.literal_eval(text)
            ok = isinstance(shape, (tuple, list)) and all(_is_int(d) and d >= 0 for d in shape)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            ok = False
        if not ok:
            raise FormatError(f"{where}: attribute __shape__={text!r} is not a tuple of integers")
    text = attrs.get("__dtype__")
    if text is not None:
        try:
            np_dtype(int(text) if text.lstrip("-").isdigit() else text)
        except MXNetError as exc:
            raise FormatError(f"{where}: attribute __dtype__={text!r}: {exc}") from None


def _parse_params(op: OpDef, attrs: dict[str, str], where: str) -> tuple[dict, dict[str, str], frozenset]:
    names = {p.name for p in op.params}
    if op.extra.get("free_params"):   # Custom: every plain attr is a param of the op's prop
        names |= {k for k in attrs if not k.startswith("__")}
    raw = {k: v for k, v in attrs.items() if k in names}
    user = {k: v for k, v in attrs.items() if k not in names}
    try:
        params = op.parse_params(raw)
    except (MXNetError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        raise FormatError(f"{where}: bad parameters for {op.name}: {exc}") from None
    return params, user, frozenset(raw)


def _op_node(i: int, rec: dict, attrs: dict[str, str], nodes: list[Node], where: str) -> Node:
    op_name = rec["op"]
    op = find_op(op_name)
    if op is None:
        raise FormatError(f"{where}: unknown operator {op_name!r}")
    params, user, given = _parse_params(op, attrs, where)
    slots = op.list_arguments(params) + op.list_aux(params)
    entries = rec["inputs"]
    if len(entries) != len(slots):
        raise FormatError(f"{where}: {op.name} takes {len(slots)} inputs {slots} for these parameters, "
                          f"the file gives {len(entries)}")
    inputs = [_entry(e, nodes, i, where, f"input {k} ('{slot}')")
              for k, (e, slot) in enumerate(zip(entries, slots))]
    return Node(op, rec["name"], params, user, inputs, given)


def _node(i: int, rec: Any, nodes: list[Node]) -> Node:
    where = _where(i, rec)
    if not isinstance(rec, dict):
        raise FormatError(f"{where}: a node must be an object, got {type(rec).__name__}")
    for key in ("op", "name"):
        if not isinstance(rec.get(key), str):
            raise FormatError(f"{where}: missing or non-string '{key}'")
    if not isinstance(rec.get("inputs", []), list):
        raise FormatError(f"{where}: 'inputs' must be a list")
    rec = {**rec, "inputs": rec.get("inputs", [])}
    if rec.get("subgraphs"):
        raise FormatError(f"{where}: subgraphs are not supported")
    attrs = _attrs_of(rec, where)
    if rec["op"] == "null":
        if rec["inputs"]:
            raise FormatError(f"{where}: a variable node must have no inputs")
        _check_var_attrs(attrs, where)
        return Node(None, rec["name"], attrs=attrs)
    return _op_node(i, rec, attrs, nodes, where)


def _check_tables(doc: dict, nodes: list[Node]) -> None:
    arg_nodes = doc.get("arg_nodes")
    if arg_nodes is not None:
        if not isinstance(arg_nodes, list) or not all(_is_int(a) for a in arg_nodes):
            raise FormatError("symbol JSON: 'arg_nodes' must be a list of node indices")
        for a in arg_nodes:
            if not 0 <= a < len(nodes) or not nodes[a].is_variable:
                raise FormatError(f"symbol JSON: arg_nodes lists {a}, which is not a variable node")
    row_ptr = doc.get("node_row_ptr")
    if row_ptr is not None:
        expect = [0]
        for n in nodes:
            expect.append(expect[-1] + n.num_outputs)
        if row_ptr != expect:
            bad = next((k for k, (a, b) in enumerate(zip(row_ptr, expect)) if a != b), len(expect) - 1)
            raise FormatError(f"symbol JSON: node_row_ptr disagrees with the operators' output counts "
                              f"from node {max(bad - 1, 0)} on (file {row_ptr}, expected {expect})")


def _parse_doc(text: str | bytes) -> dict:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"symbol JSON: not UTF-8 text ({exc})") from None
    if not isinstance(text, str):
        raise TypeError(f"load_json expects a str, got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"symbol JSON: invalid JSON ({exc})") from None
    except RecursionError:
        raise FormatError("symbol JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise FormatError(f"symbol JSON: the document must be an object, got {type(doc).__name__}")
    for key in ("nodes", "heads"):
        if not isinstance(doc.get(key), list):
            raise FormatError(f"symbol JSON: missing or non-list '{key}' (keys present: {sorted(doc)})")
    if not doc["heads"]:
        raise FormatError("symbol JSON: 'heads' is empty")
    return doc


def load_json(text: str | bytes) -> Symbol:
    """Parse symbol JSON written by symjit or MXNet 1.x; raise FormatError for a bad document.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    >>> mx.sym.load_json(net.tojson()).list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    """
    doc = _parse_doc(text)
    nodes: list[Node] = []
    for i, rec in enumerate(doc["nodes"]):
        nodes.append(_node(i, rec, nodes))
    heads = [_entry(h, nodes, len(nodes), "symbol JSON: heads", f"head {k}")
             for k, h in enumerate(doc["heads"])]
    _check_tables(doc, nodes)
    return Symbol(heads)


def load(fname: str | os.PathLike) -> Symbol:
    """Load a ``*-symbol.json`` file (MXNet 1.x's or symjit's).

    >>> import symjit as mx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'net-symbol.json')
    >>> mx.sym.Variable('x').save(path)
    >>> mx.sym.load(path).list_arguments()
    ['x']
    """
    with open(fname, "rb") as f:
        data = f.read()
    try:
        return load_json(data)
    except FormatError as exc:
        raise FormatError(f"{os.fspath(fname)}: {exc}") from None
