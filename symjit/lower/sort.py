"""Target-neutral lowering of sort, argsort, topk and the values gradient (:mod:`symjit.ops.sort`):
the target's loop runs over the rows (one CPU iteration or one CUDA thread per row); each sorts
its row's indices with :func:`~symjit.ops.sort.argsort_row` (a merge sort in the two planned int64
scratch buffers, wrapped per target like the scalar bodies; topk's few entries of a long row by
:func:`~symjit.ops.sort.topk_row`, one pass that keeps them in order), then writes its outputs
from them.
No kernel allocates, and every index read comes from the sort itself.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.topk(x, k=2, ret_typ='both').simple_bind(mx.cpu(), x=(1, 4))
>>> [o.asnumpy().tolist() for o in ex.forward(x=mx.nd.array([[1, 9, 4, 9]]))]
[[[9.0, 9.0]], [[1.0, 3.0]]]
"""
from __future__ import annotations

import numpy as np

from ..ops.rules import norm_axis
from ..ops.sort import TOPK_INSERT_MAX, argsort_row, topk_row
from .emit import dims, literal
from .rules import ANY, rule

__all__: list[str] = []


def _views(k, arrays: list[str], like: str, axis) -> tuple[list[str], str, str, str]:
    """(A, n, B) views of ``arrays`` (each with ``like``'s number of elements) and the sources
    of A, n and B."""
    shape = k.info[like].shape
    if axis is None:
        before, mid, after = "1", f"{like}.size", "1"
    else:
        ax = norm_axis(axis, len(shape))
        before, mid, after = dims(like, range(ax)), f"{like}.shape[{ax}]", dims(like, range(ax + 1,
                                                                                            len(shape)))
    views = []
    for arr in arrays:
        v = k.tmp("v")
        k.line(f"{v} = {arr}.reshape({before}, {mid}, {after})")
        views.append(v)
    return views, before, mid, after


def _sorted_rows(k, node, data: str, others: list[str]):
    """Open the loop over rows with each row's order in ``ind``; returns the views of ``data``,
    the indices, ``others`` (outputs or gradients shaped like their own (A, m, B)), and (a, b, n)."""
    p = node.params
    ws = [f"{w}" for w in k.workspace]
    (x3, ind3, tmp3), before, mid, after = _views(k, [data, ws[0], ws[1]], data, p["axis"])
    views = []
    for arr in others:
        v = k.tmp("v")
        k.line(f"{v} = {arr}.reshape({before}, {arr}.size // (({before}) * ({after})), {after})")
        views.append(v)
    target = k.target
    n, rows = k.tmp("n"), k.tmp("rows")
    k.line(f"{n} = {mid}")
    k.line(f"{rows} = ({before}) * ({after})")
    idx = target.open_loop(k, [rows])
    a, b = k.tmp("a"), k.tmp("b")
    k.line(f"{a} = {idx[0]} // ({after})")
    k.line(f"{b} = {idx[0]} % ({after})")
    ascend = k.const(int(bool(p["is_ascend"])))    # a kernel argument: one form for both orders
    whole = f"{k.module.body(argsort_row)}({x3}, {a}, {b}, {n}, {ind3}, {tmp3}, {ascend})"
    keep = _keep(k, node, n)
    if keep != n:   # topk: a few of a long row are kept by insertion, in one pass
        k.line(f"if not ({keep} <= {TOPK_INSERT_MAX} and {keep} * 8 <= {n} and "
               f"{k.module.body(topk_row)}({x3}, {a}, {b}, {n}, {keep}, {ind3}, {ascend})):")
        k.line(f"    {whole}")
    else:
        k.line(whole)
    return target, idx, x3, ind3, views, (a, b, n, keep)


def _keep(k, node, n: str) -> str:
    """How many entries of a row of ``n`` the op keeps (topk's ``k``, a kernel argument)."""
    if node.op.name != "topk" and not node.params.get("k"):
        return n
    k_ = node.params["k"]
    return n if k_ < 1 else f"min({k.const(k_)}, {n})"


def sort_rows(k, node, ins, outs) -> None:
    p = node.params
    target, idx, x3, ind3, views, (a, b, n, keep) = _sorted_rows(k, node, ins[0], list(outs))
    q = k.tmp("q")
    mode = {"sort": "value", "argsort": "indices"}.get(node.op.name, p.get("ret_typ"))
    if mode == "mask":
        dt = k.info[outs[0]].dtype
        k.line(f"for {q} in range({n}):")
        k.line(f"    {views[0]}[{a}, {q}, {b}] = {literal(0.0, dt)}")
        k.line(f"for {q} in range({keep}):")
        k.line(f"    {views[0]}[{a}, {ind3}[{a}, {q}, {b}], {b}] = {literal(1.0, dt)}")
    else:
        k.line(f"for {q} in range({keep}):")
        if mode in ("value", "both"):
            k.line(f"    {views[0]}[{a}, {q}, {b}] = {x3}[{a}, {ind3}[{a}, {q}, {b}], {b}]")
        if mode in ("indices", "both"):
            k.line(f"    {views[-1]}[{a}, {q}, {b}] = {ind3}[{a}, {q}, {b}]")
    target.close_loop(k, idx)


def backward_sort_rows(k, node, ins, outs) -> None:
    """``dx[a, ind[q], b] = dout[a, q, b]`` for the kept q, 0 elsewhere."""
    g, data = ins
    target, idx, x3, ind3, (g3, dx3), (a, b, n, _) = _sorted_rows(k, node, data, [g, outs[0]])
    q = k.tmp("q")
    zero = literal(0.0, k.info[outs[0]].dtype)
    k.line(f"for {q} in range({n}):")
    k.line(f"    {dx3}[{a}, {q}, {b}] = {zero}")
    k.line(f"for {q} in range({g3}.shape[1]):")
    k.line(f"    {dx3}[{a}, {ind3}[{a}, {q}, {b}], {b}] = {g3}[{a}, {q}, {b}]")
    target.close_loop(k, idx)


def _scratch(data_slot: int):
    def workspace(node, ins, outs):
        n = int(np.prod(ins[data_slot].shape))
        return [((n,), np.dtype(np.int64)), ((n,), np.dtype(np.int64))]
    return workspace


for _name in ("sort", "argsort", "topk"):
    rule(_name, ANY, sort_rows, workspace=_scratch(0))
rule("_backward_sort", ANY, backward_sort_rows, workspace=_scratch(1))
