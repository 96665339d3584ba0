"""CPU lowerings of dot and batch_dot (records in :mod:`symjit.ops.linalg`): BLAS through numba's
``np.dot`` on 2-D (or per-batch) views, or, for a 2-D dot marked to run beside a net's
convolutions, :mod:`symjit.kernels.cpu.gemm_tiles` on numba's threads. Their outputs may feed an
elementwise epilogue loop."""
from __future__ import annotations

import math

from ..emit import call
from ..rules import rule
from . import CPUTarget


def _views(lhs: tuple, rhs: tuple, ta: bool, tb: bool) -> tuple[tuple, tuple]:
    """The 2-D shapes of dot's operands by MXNet's N-D rule: lhs as (M, K) or, transposed, (K, M);
    rhs as (K, N) or, transposed, (N, K)."""
    a = (lhs[0], math.prod(lhs[1:])) if ta else (math.prod(lhs[:-1]), lhs[-1])
    b = (math.prod(rhs[:-1]), rhs[-1]) if tb else (rhs[0], math.prod(rhs[1:]))
    return a, b


def _tile_kind(node, lhs: tuple, rhs: tuple, dtype) -> str | None:
    """``'nn'``, ``'tn'`` or ``'nt'`` when a 2-D product runs as ``gemm_tiles``' kernel on numba's
    threads (marked by ``lower.cpu.threaded.place_gemms``, a shape ``gemm_shapes`` takes), else None."""
    from symjit.kernels.cpu.gemm_shapes import prefers_gemm_tiles
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    if node.gemm != "threads" or (ta and tb) or (len(lhs) == 1 and len(rhs) == 1):
        return None
    a, b = _views(lhs, rhs, ta, tb)
    kind = "tn" if ta else "nt" if tb else "nn"
    m, kk = (a[1], a[0]) if ta else a
    n = b[0] if tb else b[1]
    return kind if prefers_gemm_tiles(kind, m, kk, n, dtype) else None


def _dot_workspace(node, ins, outs):
    """``gemm_nt_tiles_parts``'s scratch when it takes the product, else none."""
    from symjit.kernels.cpu.gemm_shapes import gemm_nt_scratch
    if _tile_kind(node, ins[0].shape, ins[1].shape, ins[0].dtype) != "nt":
        return []
    (m, kk), (n, _) = _views(ins[0].shape, ins[1].shape, False, True)
    return [((gemm_nt_scratch(m, kk, n),), ins[0].dtype)]


def _dot_lower(k, node, ins, outs):
    """BLAS through numba's np.dot on 2-D views (MXNet's N-D rule: lhs as (M, K) or (K, M)), or
    ``gemm_tiles``' kernels on numba's threads in a convolution net."""
    lhs, rhs, out = ins[0], ins[1], outs[0]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    if len(k.info[lhs].shape) == 1 and len(k.info[rhs].shape) == 1:
        k.line(f"{out}[0] = np.dot({lhs}, {rhs})")
        return None
    def views(vk) -> tuple[str, str, str]:
        a, bm, o = vk.tmp("a"), vk.tmp("b"), vk.tmp("o")
        vk.line(f"{a} = {lhs}.reshape({lhs}.shape[0], -1)" if ta
                else f"{a} = {lhs}.reshape(-1, {lhs}.shape[-1])")
        vk.line(f"{bm} = {rhs}.reshape(-1, {rhs}.shape[-1])" if tb
                else f"{bm} = {rhs}.reshape({rhs}.shape[0], -1)")
        vk.line(f"{o} = {out}.reshape({a}.shape[{1 if ta else 0}], {bm}.shape[{0 if tb else 1}])")
        return a, bm, o
    kind = _tile_kind(node, k.info[lhs].shape, k.info[rhs].shape, k.info[lhs].dtype)
    if kind is not None:   # the tiles run in parts: a kernel of their own before the epilogue's
        scratch = [k.workspace[0]] if kind == "nt" else []

        def tiles(tk) -> None:
            call(tk, "gemm_tiles", f"gemm_{kind}_tiles_parts", *views(tk), *scratch)
        k.prior.append(([lhs, rhs, out, *scratch], tiles))
        return None
    a, bm, o = views(k)
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


rule("dot", CPUTarget, _dot_lower, epilogue=True, workspace=_dot_workspace)
rule("batch_dot", CPUTarget, _batch_dot_lower, epilogue=True)
