"""Symbol JSON in MXNet 1.x's format: what ``Symbol.tojson`` writes and ``mx.sym.load_json`` /
``mx.sym.load`` read (:func:`read_json` gives the graph's heads, which :mod:`symjit.symbol.symbol`
wraps as a Symbol).

The document has five keys::

    nodes         [{"op": "null" | op name, "name": str, "attrs": {str: str}, "inputs": [[i, j, v]]}]
    arg_nodes     indices of the variable nodes (arguments and aux states alike)
    node_row_ptr  prefix sums of every node's output count (hidden outputs included)
    heads         the outputs, [[node, output, version]]
    attrs         {"mxnet_version": ["int", 10901]}, with "is_np_shape": ["int", 1] when written
                  with NumPy shape semantics on (a Variable's -1 is then its unknown size)

Writing follows MXNet: nodes in graph order, an op's ``attrs`` hold the params the user gave
(as strings) and its user attributes, a variable's ``attrs`` its own attributes (variables an op
created carry a copy of the op's attributes, so ``fc1_weight`` has ``num_hidden``), and an input
read in an aux-state slot (which the op updates) has version 1, 2... as MXNet counts them.

Reading accepts what MXNet builds write, as MXNet itself does:

- ``node_row_ptr`` is informative. Builds count hidden outputs that others lack (MXNet's pip
  build with oneDNN gives ``Pooling`` a second output, its workspace), so a node may span more rows
  than its op has outputs here; a file without ``node_row_ptr`` loads too. Inputs and heads name
  ``(node, output)`` themselves, so the graph never needs the table.
- Older files: ``param``/``attr`` instead of ``attrs``, missing ``attrs``/``inputs``/``arg_nodes``,
  two-element entries, keys such as ``backward_source_id`` (ignored). Files without
  ``attrs.mxnet_version`` predate MXNet 0.9: their bare hidden attributes (``lr_mult``) become
  ``__lr_mult__``, and ops listing only their arguments get the aux-state variables that
  composition creates (``bn1_moving_mean``).
- Nodes may refer to later nodes (MXNet writes graph order, but nothing requires it).
- Read with NumPy shape semantics on, a file written without them (no ``attrs.is_np_shape``) has
  its Variables' ``__shape__`` brought to the NumPy form, as MXNet does: a 0 (unknown there)
  becomes -1, and a ``()`` (an unknown shape there) is dropped.

A file that is truly inconsistent raises :class:`~symjit.base.FormatError` naming the node (index
and name) and what is wrong: an input or head naming a node that does not exist or an output the
op does not have, inputs that form a cycle, an input count the op does not take, a
``node_row_ptr`` that is not prefix sums over the nodes or gives a node fewer rows than the file
uses. Nothing in a file is executed: param strings go through the registry's ``Param.parse``
(``ast.literal_eval`` of literals only). Attributes of an op node that are not params of the op
are kept as user attributes (MXNet does the same).
"""
from __future__ import annotations

import ast
import json
import os
from typing import TYPE_CHECKING, Any

from ..base import FormatError, MXNetError, np_dtype
from ..ops.registry import OpDef, find_op
from ..util import is_np_shape
from .graph import Node, input_variable, topo_order
from .naming import normalize_attrs

if TYPE_CHECKING:
    from .symbol import Symbol

__all__ = ["to_json", "to_dict", "read_json", "read_file", "MXNET_VERSION"]

MXNET_VERSION = 10901
_HIDDEN_KEYS_SINCE = 900   # MXNet 0.9.0 began storing hidden attributes as __key__


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
        "attrs": {"mxnet_version": ["int", MXNET_VERSION],
                  **({"is_np_shape": ["int", 1]} if is_np_shape() else {})},
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


def _entry_ref(e: Any, where: str, what: str) -> tuple[int, int]:
    """Check the form of ``[node, output(, version)]``; the version is informative only."""
    if not isinstance(e, list) or len(e) not in (2, 3) or not all(_is_int(x) for x in e):
        raise FormatError(f"{where}: {what} must be [node, output, version] integers, got {e!r}")
    if len(e) == 3 and e[2] < 0:
        raise FormatError(f"{where}: {what} has a negative version {e[2]}")
    return e[0], e[1]


def _entry(e: Any, nodes: list[Node], where: str, what: str) -> tuple[Node, int]:
    """Resolve ``[node, output(, version)]`` against all nodes of the file (any order)."""
    src_i, out_i = _entry_ref(e, where, what)
    if not 0 <= src_i < len(nodes):
        raise FormatError(f"{where}: {what} refers to node {src_i}, which does not exist "
                          f"(the file has nodes 0..{len(nodes) - 1})")
    src = nodes[src_i]
    if not 0 <= out_i < src.num_outputs:
        op = "a variable" if src.is_variable else f"a {src.op.name}"
        raise FormatError(f"{where}: {what} refers to output {out_i} of node {src_i} ('{src.name}'), "
                          f"{op}, which has {src.num_outputs} output(s)")
    return src, out_i


def _check_var_attrs(attrs: dict[str, str], where: str) -> None:
    text = attrs.get("__shape__")
    if text is not None:
        try:
            shape = ast.literal_eval(text)
            ok = isinstance(shape, (tuple, list)) and all(_is_int(d) and d >= -1 for d in shape)
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


def _upgrade_attrs(attrs: dict[str, str], version: int) -> dict[str, str]:
    """Files older than MXNet 0.9 store the hidden attributes bare (``lr_mult``, ``ctx_group``);
    later versions store them as ``__lr_mult__``. Bring them into today's form."""
    return normalize_attrs(attrs) if version < _HIDDEN_KEYS_SINCE else attrs


def _node(i: int, rec: Any, version: int) -> tuple[Node, list]:
    """The node of record ``i`` (inputs not yet resolved) and its raw input entries."""
    where = _where(i, rec)
    if not isinstance(rec, dict):
        raise FormatError(f"{where}: a node must be an object, got {type(rec).__name__}")
    for key in ("op", "name"):
        if not isinstance(rec.get(key), str):
            raise FormatError(f"{where}: missing or non-string '{key}'")
    entries = rec.get("inputs", [])
    if not isinstance(entries, list):
        raise FormatError(f"{where}: 'inputs' must be a list")
    if rec.get("subgraphs"):
        raise FormatError(f"{where}: subgraphs are not supported")
    attrs = _upgrade_attrs(_attrs_of(rec, where), version)
    if rec["op"] == "null":
        if entries:
            raise FormatError(f"{where}: a variable node must have no inputs")
        _check_var_attrs(attrs, where)
        return Node(None, rec["name"], attrs=attrs), []
    op = find_op(rec["op"])
    if op is None:
        raise FormatError(f"{where}: unknown operator {rec['op']!r}")
    params, user, given = _parse_params(op, attrs, where)
    return Node(op, rec["name"], params, user, [], given), entries


def _connect(i: int, node: Node, entries: list, nodes: list[Node], where: str) -> list[Node]:
    """Set ``node.inputs`` from its entries; returns the variables made for missing aux states.

    Files written before MXNet 0.9 list an op's arguments only: its aux states were not graph
    inputs then. They get the variables composition would create (``bn1_moving_mean``).
    """
    args, aux = node.op.list_arguments(node.params), node.op.list_aux(node.params)
    slots = args + aux
    made: list[Node] = []
    if aux and len(entries) == len(args):
        made = [input_variable(node, slot) for slot in aux]
        slot_attrs = node.op.extra.get("input_var_attrs", {})
        for var, slot in zip(made, aux):
            var.attrs.update(slot_attrs.get(slot, {}))
    elif len(entries) != len(slots):
        raise FormatError(f"{where}: {node.op.name} takes {len(slots)} inputs {slots} for these "
                          f"parameters, the file gives {len(entries)}")
    node.inputs = [_entry(e, nodes, where, f"input {k} ('{slot}')")
                   for k, (e, slot) in enumerate(zip(entries, slots))]
    node.inputs += [(var, 0) for var in made]
    return made


def _check_acyclic(nodes: list[Node]) -> None:
    """Reject a file whose inputs form a cycle, naming the nodes on it."""
    index = {id(n): i for i, n in enumerate(nodes)}
    state = [0] * len(nodes)          # 0 unvisited, 1 on the DFS stack, 2 done
    for root in range(len(nodes)):
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            i, k = stack[-1]
            ins = nodes[i].inputs
            if k == len(ins):
                stack.pop()
                state[i] = 2
                continue
            stack[-1] = (i, k + 1)
            j = index.get(id(ins[k][0]))
            if j is None:             # a variable made for a legacy file's missing aux state
                continue
            if state[j] == 1:
                path = [s for s, _ in stack]
                cycle = path[path.index(j):] + [j]
                names = " -> ".join(f"{c} ('{nodes[c].name}')" for c in cycle)
                raise FormatError(f"symbol JSON: the inputs form a cycle: {names}")
            if state[j] == 0:
                state[j] = 1
                stack.append((j, 0))


def _file_version(doc: dict) -> int:
    """``attrs.mxnet_version`` (``["int", 10901]``); files without it predate MXNet 0.9."""
    attrs = doc.get("attrs")
    value = attrs.get("mxnet_version") if isinstance(attrs, dict) else None
    if isinstance(value, list) and len(value) == 2 and _is_int(value[1]):
        return value[1]
    if value is not None:
        raise FormatError(f"symbol JSON: attrs.mxnet_version must be [\"int\", version], got {value!r}")
    return 0


def _numpy_shapes(doc: dict, nodes: list[Node]) -> None:
    """Read with NumPy shape semantics on, a file written without them gets its Variables' classic
    ``__shape__`` in the NumPy form (0 -> -1; ``()``, an unknown shape, dropped)."""
    attrs = doc.get("attrs")
    flag = attrs.get("is_np_shape") if isinstance(attrs, dict) else None
    if not is_np_shape() or (isinstance(flag, list) and len(flag) == 2 and flag[1]):
        return
    for node in nodes:
        text = node.attrs.get("__shape__") if node.is_variable else None
        if text is not None:
            shape = tuple(ast.literal_eval(text))    # checked by _check_var_attrs
            if shape:
                node.attrs["__shape__"] = str(tuple(-1 if d == 0 else d for d in shape))
            else:
                del node.attrs["__shape__"]


def _check_arg_nodes(doc: dict, nodes: list[Node]) -> None:
    arg_nodes = doc.get("arg_nodes")
    if arg_nodes is None:
        return
    if not isinstance(arg_nodes, list) or not all(_is_int(a) for a in arg_nodes):
        raise FormatError("symbol JSON: 'arg_nodes' must be a list of node indices")
    for a in arg_nodes:
        if not 0 <= a < len(nodes) or not nodes[a].is_variable:
            raise FormatError(f"symbol JSON: arg_nodes lists {a}, which is not a variable node")


def _check_row_ptr(doc: dict, nodes: list[Node], used: dict[int, int]) -> None:
    """``node_row_ptr`` is informative: builds count hidden outputs that others lack (oneDNN's
    ``Pooling`` workspace), so a node may span more rows than the op has outputs here. It must
    still be prefix sums over the nodes, and give every node at least one row and at least the
    outputs the file itself refers to (``used``: node index -> highest output index + 1)."""
    row_ptr = doc.get("node_row_ptr")
    if row_ptr is None:
        return
    if not isinstance(row_ptr, list) or not all(_is_int(r) for r in row_ptr):
        raise FormatError("symbol JSON: 'node_row_ptr' must be a list of integers")
    if len(row_ptr) != len(nodes) + 1 or row_ptr[0] != 0:
        raise FormatError(f"symbol JSON: node_row_ptr must have {len(nodes) + 1} entries starting at "
                          f"0 (one per node, plus one), got {row_ptr}")
    for i, node in enumerate(nodes):
        span = row_ptr[i + 1] - row_ptr[i]
        need = max(1, used.get(i, 0))
        if span < need:
            raise FormatError(f"symbol JSON: node_row_ptr gives node {i} ('{node.name}') {span} "
                              f"output(s), but the file uses {need}")


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


def read_json(text: str | bytes) -> list[tuple[Node, int]]:
    """The heads (output entries) of symbol JSON written by symjit or MXNet 1.x (what
    ``mx.sym.load_json`` wraps); a FormatError for a bad document.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    >>> [(node.name, i) for node, i in read_json(net.tojson())]
    [('fc1', 0)]
    """
    doc = _parse_doc(text)
    version = _file_version(doc)
    parsed = [_node(i, rec, version) for i, rec in enumerate(doc["nodes"])]
    nodes = [node for node, _ in parsed]
    for i, (node, entries) in enumerate(parsed):
        if not node.is_variable:
            _connect(i, node, entries, nodes, _where(i, doc["nodes"][i]))
    _check_acyclic(nodes)
    _numpy_shapes(doc, nodes)
    heads = [_entry(h, nodes, "symbol JSON: heads", f"head {k}") for k, h in enumerate(doc["heads"])]
    _check_arg_nodes(doc, nodes)
    _check_row_ptr(doc, nodes, _outputs_used(doc, parsed))
    return heads


def _outputs_used(doc: dict, parsed: list[tuple[Node, list]]) -> dict[int, int]:
    """Node index -> 1 + the highest output index that inputs and heads refer to."""
    used: dict[int, int] = {}
    for e in [e for _, entries in parsed for e in entries] + doc["heads"]:
        used[e[0]] = max(used.get(e[0], 0), e[1] + 1)
    return used


def read_file(fname: str | os.PathLike) -> list[tuple[Node, int]]:
    """The heads of a ``*-symbol.json`` file (MXNet 1.x's or symjit's), what ``mx.sym.load``
    wraps; a FormatError naming the file for a bad document.

    >>> import symjit as mx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'net-symbol.json')
    >>> mx.sym.Variable('x').save(path)
    >>> [(node.name, i) for node, i in read_file(path)]
    [('x', 0)]
    """
    with open(fname, "rb") as f:
        data = f.read()
    try:
        return read_json(data)
    except FormatError as exc:
        raise FormatError(f"{os.fspath(fname)}: {exc}") from None
