"""CPU lowerings of dot and batch_dot (records in :mod:`symjit.ops.linalg`): BLAS through numba's
``np.dot`` on 2-D (or per-batch) views. Their outputs may feed an elementwise epilogue loop."""
from __future__ import annotations

from ..rules import rule


def _dot_lower(k, node, ins, outs):
    """BLAS through numba's np.dot on 2-D views (MXNet's N-D rule: lhs as (M, K) or (K, M))."""
    lhs, rhs, out = ins[0], ins[1], outs[0]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    if len(k.info[lhs].shape) == 1 and len(k.info[rhs].shape) == 1:
        k.line(f"{out}[0] = np.dot({lhs}, {rhs})")
        return None
    a, bm, o = k.tmp("a"), k.tmp("b"), k.tmp("o")
    k.line(f"{a} = {lhs}.reshape({lhs}.shape[0], -1)" if ta else f"{a} = {lhs}.reshape(-1, {lhs}.shape[-1])")
    k.line(f"{bm} = {rhs}.reshape(-1, {rhs}.shape[-1])" if tb
           else f"{bm} = {rhs}.reshape({rhs}.shape[0], -1)")
    k.line(f"{o} = {out}.reshape({a}.shape[{1 if ta else 0}], {bm}.shape[{0 if tb else 1}])")
    k.line(f"np.dot({a}{'.T' if ta else ''}, {bm}{'.T' if tb else ''}, {o})")
    return None


def _batch_view(k, arr: str, nd: int) -> str:
    """``arr`` as (batch, rows, cols), the batch the product of the leading ``nd - 2`` dims."""
    if nd == 3:
        return arr
    name = k.tmp("v")
    batch = " * ".join(f"{arr}.shape[{d}]" for d in range(nd - 2))
    k.line(f"{name} = {arr}.reshape(({batch}, {arr}.shape[{nd - 2}], {arr}.shape[{nd - 1}]))")
    return name


def _batch_dot_lower(k, node, ins, outs):
    """One BLAS call (numba's np.dot) per batch entry on (batch, M, N) views."""
    nd = len(k.info[ins[0]].shape)
    a, bm, o = (_batch_view(k, v, nd) for v in (ins[0], ins[1], outs[0]))
    ta = ".T" if node.params["transpose_a"] else ""
    tb = ".T" if node.params["transpose_b"] else ""
    i = k.tmp("i")
    k.line(f"for {i} in range({o}.shape[0]):")
    k.line(f"    np.dot({a}[{i}]{ta}, {bm}[{i}]{tb}, {o}[{i}])")
    return None


rule("dot", "cpu", _dot_lower, epilogue=True)
rule("batch_dot", "cpu", _batch_dot_lower, epilogue=True)
