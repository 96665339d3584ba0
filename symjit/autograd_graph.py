"""The gradient of a recording as a Symbol, for ``autograd.grad(..., create_graph=True)``.

The compiler's autodiff pass (``compiler.passes.autodiff``) appends the backward program to a
forward :class:`~symjit.compiler.graph.Graph` by calling the operators' gradient rules, which
build their results from registered operators. :func:`gradient_symbol` runs that pass on a
recording's Symbol and reads the resulting program back as a Symbol: the forward operators the
gradients read, then the backward ones, with the head gradients as variables ``head<i>``. Its
outputs are the gradients of the wanted variables; differentiating it again (it is recorded as one
traced entry, like a hybridized block's call) gives gradients of gradients.

>>> import numpy as np
>>> import symjit as mx
>>> g, heads = gradient_symbol(mx.sym.sin(mx.sym.var('x')), {'x': (2,)}, {'x': np.float32},
...                            ['x'], is_train=False)
>>> heads, g.list_arguments()
(['head0'], ['head0', 'x'])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .compiler.passes.autodiff import autodiff
from .compiler.passes.build import build_forward
from .ops.registry import get_op
from .symbol.graph import Node
from .symbol.symbol import Group, Symbol

__all__ = ["gradient_symbol"]


def gradient_symbol(sym: Symbol, shapes: dict[str, tuple], dtypes: dict[str, Any], wanted: list[str],
                    is_train: bool, held: set[str] | frozenset = frozenset(),  # noqa: FBT001
                    ) -> tuple[Symbol, list[str]]:
    """The gradients of ``sym``'s outputs (each weighted by its head gradient) with respect to
    the arguments ``wanted``, as one Symbol with an output per wanted argument (zeros where no
    gradient reaches), and the names of its head-gradient variables in output order.

    ``held``: outputs of forward nodes (by output name, ``<node>_output``) the caller has
    computed already; the gradients read those values from variables ``<output name>:held``
    instead of computing them (an operator runs only for the outputs it makes that are not held,
    where a gradient reads one: BatchNorm's saved statistics, a composite's inner values).

    >>> import numpy as np
    >>> import symjit as mx
    >>> x = mx.sym.var('x')
    >>> g, _ = gradient_symbol(x * x, {'x': (1,)}, {'x': np.float32}, ['x'], is_train=False)
    >>> g.eval(x=mx.nd.array([3.0]), head0=mx.nd.array([1.0]))[0].asnumpy().tolist()
    [6.0]
    """
    graph = autodiff(build_forward(sym, shapes, dtypes, is_train), {n: "write" for n in wanted})
    made: dict[int, tuple[Node, int]] = {}
    for name, vid in list(graph.args.items()) + list(graph.aux.items()):
        made[vid] = (Node(None, name), 0)
    stem = "head"          # the head gradients' names: ``head<i>``, or longer where an argument has one
    while any(n.startswith(stem) for n in list(graph.args) + list(graph.aux)):
        stem = f"_{stem}"
    heads = []
    for idx in sorted(graph.head_grads):
        heads.append(f"{stem}{idx}")
        made[graph.head_grads[idx]] = (Node(None, heads[-1]), 0)
    given = {vid for vid, name in graph.watch.items() if name in held}
    for vid in given:
        made[vid] = (Node(None, f"{graph.watch[vid]}:held"), 0)
    for op in graph.ops:
        if all(vid in given for vid in op.outputs):
            continue
        node = Node(op.op, op.name, dict(op.params), {}, [made[i] for i in op.inputs], None)
        for i, vid in enumerate(op.outputs):
            if vid not in given:
                made[vid] = (node, i)
    zeros = get_op("_zeros")     # an argument no gradient reaches (or the graph does not read)
    outs = [Symbol([made[graph.grads[n]]]) if n in graph.grads else Symbol([(Node(
        zeros, f"{n}_grad_zero", zeros.parse_params({"shape": shapes[n], "dtype": np.dtype(dtypes[n]).name})),
        0)]) for n in wanted]
    return (outs[0] if len(outs) == 1 else Group(outs)), heads
