"""Symbol JSON: MXNet 1.x's format (``nodes``/``arg_nodes``/``node_row_ptr``/``heads``/``attrs``)."""
from __future__ import annotations

import json

from ..base import FormatError
from ..ops.registry import get_op
from .symbol import Node, Symbol, topo_order

__all__ = ["to_json", "load_json", "load"]


def to_json(sym: Symbol) -> str:
    nodes = topo_order(sym._outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
    out_nodes, row_ptr = [], [0]
    for n in nodes:
        rec = {"op": "null" if n.is_variable else n.op.name, "name": n.name}
        attrs = dict(n.attrs)
        if not n.is_variable:
            attrs.update(n.op.format_params(n.params))
        if attrs:
            rec["attrs"] = attrs
        rec["inputs"] = [[index[id(src)], i, 0] for src, i in n.inputs]
        out_nodes.append(rec)
        row_ptr.append(row_ptr[-1] + n.num_outputs)
    doc = {
        "nodes": out_nodes,
        "arg_nodes": [i for i, n in enumerate(nodes) if n.is_variable],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(n)], i, 0] for n, i in sym._outputs],
        "attrs": {"mxnet_version": ["int", 10901]},
    }
    return json.dumps(doc, indent=2)


def load_json(text: str) -> Symbol:
    """Parse symbol JSON (symjit's or MXNet 1.x's). Nothing in it is executed."""
    try:
        doc = json.loads(text)
        recs = doc["nodes"]
        heads = doc["heads"]
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(f"symbol JSON: not a symbol file ({exc})") from None
    nodes: list[Node] = []
    for i, rec in enumerate(recs):
        attrs = {}
        for key in ("attrs", "param", "attr"):
            attrs.update({str(k): str(v) for k, v in (rec.get(key) or {}).items()})
        inputs = [(nodes[int(e[0])], int(e[1])) for e in rec.get("inputs", [])]
        if rec.get("op") == "null":
            nodes.append(Node(None, rec["name"], attrs=attrs))
            continue
        op = get_op(rec["op"])
        param_names = {p.name for p in op.params}
        params = op.parse_params({k: v for k, v in attrs.items() if k in param_names})
        user = {k: v for k, v in attrs.items() if k not in param_names}
        nodes.append(Node(op, rec["name"], params, user, inputs))
        del i
    return Symbol([(nodes[int(h[0])], int(h[1])) for h in heads])


def load(fname: str) -> Symbol:
    """Load a ``*-symbol.json`` file."""
    with open(fname) as f:
        return load_json(f.read())
