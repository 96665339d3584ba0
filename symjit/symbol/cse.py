"""Common subexpression elimination on a Symbol (MXNet's ``MXNET_ELIMINATE_COMMON_EXPR``).

Two operator nodes with the same op, the same parameters and the same inputs compute the same
values, so the second is replaced by the first. Ops whose results are not a function of their
inputs stay apart: samplers, Dropout, the image ops that draw, Custom ops, and ops with aux
states (they update them). Where merging makes two heads of the symbol the same entry, each later
head gets a ``_copy`` of it, so that every output keeps an array of its own (as MXNet does).
The executor binds the result (``Executor.get_optimized_symbol``); names of arguments, aux states
and outputs are those of the original symbol.

>>> import symjit as mx
>>> a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
>>> y = (a + b) * (a + b)
>>> len(y.get_internals()), len(eliminate_common_expr(y).get_internals())
(5, 4)
"""
from __future__ import annotations

from ..ops.registry import get_op
from .symbol import Node, Symbol, topo_order

__all__ = ["eliminate_common_expr"]

_DRAWS = frozenset({"Dropout", "Custom"})


def _deterministic(node: Node) -> bool:
    op = node.op
    return not (op.name in _DRAWS or op.extra.get("family") in ("random", "sample")
                or "_random_" in op.name or op.list_aux(node.params))


def _key(node: Node, entry: dict[tuple[int, int], tuple[Node, int]]) -> tuple | None:
    """What makes two nodes the same computation; None for a node that is never merged."""
    if node.is_variable or not _deterministic(node):
        return None
    try:
        params = tuple(sorted(node.op.format_params(node.params).items()))
        hash(params)
    except Exception:   # noqa: BLE001 - parameters without a plain form (subgraphs): kept apart
        return None
    ins = tuple((id(entry[(id(n), i)][0]), entry[(id(n), i)][1]) for n, i in node.inputs)
    return node.op.name, params, ins


def eliminate_common_expr(sym: Symbol) -> Symbol:
    """The symbol with each repeated computation made once (see the module docstring)."""
    entry: dict[tuple[int, int], tuple[Node, int]] = {}
    seen: dict[tuple, Node] = {}
    changed = False
    for node in topo_order(sym._outputs):
        key = _key(node, entry)
        keep = seen.setdefault(key, node) if key is not None else node
        if keep is not node:
            changed = True
        elif any(entry[(id(n), i)] != (n, i) for n, i in node.inputs):
            keep = Node(node.op, node.name, dict(node.params), dict(node.attrs),
                        [entry[(id(n), i)] for n, i in node.inputs], node.given)
            changed = True
        for i in range(max(node.num_outputs, 1)):
            entry[(id(node), i)] = (keep, i)
    if not changed:
        return sym
    return Symbol(_distinct_heads([entry[(id(n), i)] for n, i in sym._outputs]))


def _distinct_heads(heads: list[tuple[Node, int]]) -> list[tuple[Node, int]]:
    """Heads that merging made equal: each later one a ``_copy`` of the first."""
    out: list[tuple[Node, int]] = []
    taken: set[tuple[int, int]] = set()
    for node, i in heads:
        key = (id(node), i)
        if key in taken:
            name = f"{node.name}_copy{len(out)}"
            out.append((Node(get_op("_copy"), name, {}, {}, [(node, i)], frozenset()), 0))
        else:
            taken.add(key)
            out.append((node, i))
    return out
