"""The nodes of a symbol graph and the walks over them, what the readers and writers of a graph
(:mod:`symjit.symbol.json_io`, :mod:`symjit.symbol.infer`) share with :class:`~symjit.symbol.Symbol`.

A :class:`Node` is a variable (``op is None``) or an operator application with parsed params and
input entries ``(node, output_index)``. Operator inputs are the op's arguments followed by its aux
states, as in MXNet's symbol JSON. Graph order everywhere is the post-order depth-first walk over
inputs in order (what MXNet lists by).

>>> import symjit as mx
>>> net = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, name='fc')
>>> [n.name for n in topo_order(net._outputs)]
['x', 'fc_weight', 'fc_bias', 'fc']
"""
from __future__ import annotations

from ..ops.registry import OpDef

__all__ = ["Node", "topo_order", "aux_variable_ids", "input_variable"]


class Node:
    """One graph node: a variable or an operator application."""

    __slots__ = ("op", "name", "params", "attrs", "inputs", "given")

    def __init__(self, op: OpDef | None, name: str, params: dict | None = None,
                 attrs: dict[str, str] | None = None, inputs: list[tuple[Node, int]] | None = None,
                 given: frozenset[str] | None = None):
        self.op = op
        self.name = name
        self.params = params or {}
        self.attrs = attrs or {}
        self.inputs = list(inputs or [])
        # names of the params the user gave (what MXNet writes in JSON attrs); None means all
        self.given = given

    def given_params(self) -> dict[str, str]:
        """The explicitly given params as MXNet's JSON attr strings (all params if unknown)."""
        if self.op is None:
            return {}
        formatted = self.op.format_params(self.params)
        if self.given is None:
            return formatted
        return {k: v for k, v in formatted.items() if k in self.given}

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def num_outputs(self) -> int:
        return 1 if self.op is None else len(self.op.list_outputs(self.params))

    @property
    def num_visible(self) -> int:
        return 1 if self.op is None else self.op.num_visible(self.params)

    def input_names(self) -> list[str]:
        """Names of this op's input slots: arguments, then aux states."""
        return self.op.list_arguments(self.params) + self.op.list_aux(self.params)

    def num_args(self) -> int:
        return len(self.op.list_arguments(self.params))

    def output_name(self, index: int) -> str:
        if self.op is None:
            return self.name
        return f"{self.name}_{self.op.list_outputs(self.params)[index]}"

    def __repr__(self) -> str:
        return f"Node({self.op.name if self.op else 'null'}, {self.name!r})"


def topo_order(entries: list[tuple[Node, int]]) -> list[Node]:
    """Post-order DFS over inputs in order, each node once (iterative: deep graphs are fine)."""
    order: list[Node] = []
    seen: set[int] = set()
    for head, _ in entries:
        if id(head) in seen:
            continue
        stack: list[tuple[Node, int]] = [(head, 0)]
        seen.add(id(head))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def aux_variable_ids(nodes: list[Node]) -> set[int]:
    """ids of the variables consumed in an aux-state slot of some op."""
    aux: set[int] = set()
    for node in nodes:
        if node.op is not None:
            n_args = node.num_args()
            for src, _ in node.inputs[n_args:]:
                aux.add(id(src))
    return aux


def input_variable(node: Node, slot: str) -> Node:
    """The variable MXNet creates for an input of ``node`` that was not given: ``{name}_{slot}``
    (``fc1_weight``, ``bn1_moving_mean``), carrying a copy of the op's attributes, params
    included (``fc1_weight`` gets ``num_hidden``). The caller adds the op's per-slot attributes."""
    return Node(None, f"{node.name}_{slot}", attrs={**node.attrs, **node.given_params()})
