"""Pass 1b: float16 values computed in float32 (Graph -> Graph).

The kernels have no float16 type. Every float16 value of a program becomes a float32 value; an op
that *makes* a float16 value from values of other dtypes (``Cast`` to float16, a source or sampler
op with ``dtype='float16'``) computes it in float32 (its ``dtype`` parameter widened) and a
``_round_half`` after it rounds it to the nearest float16 number, so every float16 value holds
exactly what a float16 array would. Ops on float16 values then compute in float32, rounding only
where the next such op makes a float16 value (symjit's choice; MXNet rounds after every operator).
The arrays of such a program are bound by ``executor.HalfExecutor``, which holds the user's
float16 arrays and copies them to and from the program's float32 ones.

>>> import numpy as np, symjit as mx
>>> from symjit.compiler.passes.build import build_forward
>>> y = mx.sym.Cast(mx.sym.Variable('x'), dtype='float16') * 2
>>> g = widen_half(build_forward(y, {'x': (3,)}, {'x': np.dtype('float32')}, False))
>>> [op.op.name for op in g.ops], sorted({v.dtype.name for v in g.values.values()})
(['Cast', '_round_half', '_mul_scalar'], ['float32'])
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph, GraphBuilder, OpNode

__all__ = ["widen_half", "HALF"]

HALF = np.dtype("float16")
WIDE = np.dtype("float32")


def _makes_half(g: Graph, op: OpNode) -> list[int]:
    """The float16 outputs ``op`` makes from values of other dtypes (none when an input is
    float16: it then computes on widened values, as every op on float16 values does)."""
    if any(g.values[i].dtype == HALF for i in op.inputs):
        return []
    return [o for o in op.outputs if g.values[o].dtype == HALF]


def widen_half(g: Graph) -> Graph:
    """See the module docstring."""
    if not any(v.dtype == HALF for v in g.values.values()):
        return g
    g = g.copy()
    ops: list[OpNode] = []
    for op in g.ops:
        made = _makes_half(g, op)
        ops.append(op)
        if not made:
            continue
        if op.params.get("dtype") is not None and np.dtype(op.params["dtype"]) == HALF:
            op.params = {**op.params, "dtype": WIDE.name}
        for out in made:
            ops.append(_rounding(g, op, out))
    for v in g.values.values():
        if v.dtype == HALF:
            v.dtype = WIDE
    g.ops = ops
    return g


def _rounding(g: Graph, op: OpNode, out: int) -> OpNode:
    """Point ``op``'s output ``out`` at a fresh float32 value and return the ``_round_half`` node
    that writes ``out`` from it."""
    b = GraphBuilder(g, op.phase, op.train)
    v = g.values[out]
    raw = b.new_value(f"{v.name}_wide", v.shape, WIDE)
    op.outputs = [raw if o == out else o for o in op.outputs]
    saved, g.ops = g.ops, []
    made = b.add("_round_half", [raw], name=f"{op.name}_round_half")[0]
    node, g.ops = g.ops[-1], saved
    del g.values[made]
    node.outputs = [out]
    return node
