"""CUDA lowering of the matrix products (FullyConnected; dot of two arrays with at least one of
them 2-D or more): a tiled GEMM in shared memory, the group's epilogue fused into the store.

The output, seen as an (M, N) matrix (rows: FullyConnected's batch, dot's leading lhs axes), is cut
into T x T tiles (T = :func:`symjit.kernels.cuda.gemm_tile`: 16 on a GPU, 2 on the simulator); one
block of T*T threads computes a tile, blocks striding over the tiles. For each step of T along
the contraction K, the block stages a T x T tile of each operand in shared memory (zeros past the
edges), synchronises, and every thread accumulates its element's T products from shared memory;
so each operand element is read from global memory once per tile row or column instead of once per
output element. Every transpose the forward and backward programs use is a choice of how a tile
is loaded (``a[i, k]`` or ``a[k, i]``). Threads whose element lies past the matrix edge load and
synchronise with the others and store nothing. The element the thread owns is then the rule's
element expression: the shared loop generator composes the group's elementwise consumers (bias,
activation) on it and stores inside the tile loop, as for any epilogue.

Vector dot products and batch_dot keep the target-neutral per-element rules
(:mod:`symjit.lower.accumulate`).
"""
from __future__ import annotations

from ...kernels.cuda import TILE, gemm_tile
from ..accumulate import dot_elements, matrix_view
from ..rules import rule


def _decode(k, flat: str, dims: list[str]) -> list[str]:
    """Emit the row-major decoding of ``flat`` over ``dims``; return the index names."""
    if len(dims) == 1:
        return [flat]
    idx, rest = [k.tmp("i") for _ in dims], k.tmp("rest")
    k.line(f"{rest} = {flat}")
    for d in reversed(range(len(dims))):
        k.line(f"{idx[d]} = {rest} % ({dims[d]})")
        k.line(f"{rest} = {rest} // ({dims[d]})")
    return idx


def _tiled(k, out: str, a: str, b: str, ta: bool, tb: bool, extent: str, row_axes: int,
           dtype, bias: str | None = None):
    """Set the kernel's loop to the tiled GEMM of the 2-D views ``a`` (M x K, or K x M with
    ``ta``) and ``b`` (K x N, or N x K with ``tb``) into ``out`` (its first ``row_axes`` axes are
    the rows); return the element expression (the thread's sum, plus ``bias[column]``)."""
    t = gemm_tile()
    shape = k.info[out].shape
    static_m = 1
    for d in shape[:row_axes]:
        static_m *= d
    static_n = 1
    for d in shape[row_axes:]:
        static_n *= d
    k.block_kind = "tile"
    sdt = f"numba.{dtype.name}"
    names: dict[str, str] = {}

    def open_loop(k, dims: list[str]) -> list[str]:
        rows, cols = " * ".join(dims[:row_axes]) or "1", " * ".join(dims[row_axes:]) or "1"
        tiles_n = f"(({cols}) + {t - 1}) // {t}"
        k.per_block = (f"(({rows}) + {t - 1}) // {t} * ({tiles_n})",
                       -(-static_m // TILE) * -(-static_n // TILE))
        m, n, kk, tn = k.tmp("m"), k.tmp("n"), k.tmp("kk"), k.tmp("tn")
        ty, tx, sa, sb = k.tmp("ty"), k.tmp("tx"), k.tmp("sa"), k.tmp("sb")
        k.line(f"{m} = {rows}")
        k.line(f"{n} = {cols}")
        k.line(f"{kk} = {extent}")
        k.line(f"{tn} = ({n} + {t - 1}) // {t}")
        k.line(f"{ty} = cuda.threadIdx.x // {t}")
        k.line(f"{tx} = cuda.threadIdx.x % {t}")
        # (t, t + 1): a padded row keeps a column of the tile off a single shared-memory bank
        k.line(f"{sa} = cuda.shared.array(({t}, {t + 1}), {sdt})")
        k.line(f"{sb} = cuda.shared.array(({t}, {t + 1}), {sdt})")
        tile, ib, jb, i, j, acc, k0, s = (k.tmp(p) for p in ("tile", "ib", "jb", "i", "j", "acc", "k0", "s"))
        k.line(f"for {tile} in range(cuda.blockIdx.x, (({m} + {t - 1}) // {t}) * {tn}, cuda.gridDim.x):")
        k.indent += 1
        k.line(f"{ib} = ({tile} // {tn}) * {t}")
        k.line(f"{jb} = ({tile} % {tn}) * {t}")
        k.line(f"{i} = {ib} + {ty}")
        k.line(f"{j} = {jb} + {tx}")
        k.line(f"{acc} = {sdt}(0)")
        k.line(f"for {k0} in range(0, {kk}, {t}):")
        k.indent += 1
        # sa[row, k] and sb[k, column] of the tile; consecutive threads (tx) read consecutive
        # addresses of the operand's contiguous axis, whichever way it is transposed
        if ta:   # a is K x M
            k.line(f"{sa}[{tx}, {ty}] = {a}[{k0} + {ty}, {ib} + {tx}] "
                   f"if {ib} + {tx} < {m} and {k0} + {ty} < {kk} else {sdt}(0)")
        else:    # a is M x K
            k.line(f"{sa}[{ty}, {tx}] = {a}[{i}, {k0} + {tx}] if {i} < {m} and {k0} + {tx} < {kk} "
                   f"else {sdt}(0)")
        if tb:   # b is N x K
            k.line(f"{sb}[{tx}, {ty}] = {b}[{jb} + {ty}, {k0} + {tx}] "
                   f"if {jb} + {ty} < {n} and {k0} + {tx} < {kk} else {sdt}(0)")
        else:    # b is K x N
            k.line(f"{sb}[{ty}, {tx}] = {b}[{k0} + {ty}, {j}] if {k0} + {ty} < {kk} and {j} < {n} "
                   f"else {sdt}(0)")
        k.line("cuda.syncthreads()")
        k.line(f"for {s} in range({t}):")
        k.line(f"    {acc} += {sa}[{ty}, {s}] * {sb}[{s}, {tx}]")
        k.line("cuda.syncthreads()")
        k.indent -= 1
        k.line(f"if {i} < {m} and {j} < {n}:")
        k.indent += 1
        names.update(acc=acc, j=j)
        return _decode(k, i, dims[:row_axes]) + _decode(k, j, dims[row_axes:])

    def close_loop(k, idx: list[str]) -> None:
        k.indent -= 2

    k.loop = (open_loop, close_loop)

    def expr(idx: list[str]) -> str:
        return names["acc"] if bias is None else f"{names['acc']} + {bias}[{names['j']}]"
    return expr


def fc_tiled(k, node, ins, outs):
    x, w, out = ins[0], ins[1], outs[0]
    flat = node.params["flatten"]
    x2 = matrix_view(k, x, 1 if flat else len(k.info[x].shape) - 1)
    rows = 1 if flat else len(k.info[out].shape) - 1
    bias = None if node.params["no_bias"] else ins[2]
    return _tiled(k, out, x2, w, False, True, f"{w}.shape[1]", rows, k.info[x].dtype, bias)


def dot_tiled(k, node, ins, outs):
    lhs, rhs, out = ins[0], ins[1], outs[0]
    nl, nr = len(k.info[lhs].shape), len(k.info[rhs].shape)
    if nl == 1 and nr == 1:
        return dot_elements(k, node, ins, outs)   # a single sum: no tile to share
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    a = matrix_view(k, lhs, 1 if ta else nl - 1)
    b = matrix_view(k, rhs, nr - 1 if tb else 1)
    return _tiled(k, out, a, b, ta, tb, f"{a}.shape[{0 if ta else 1}]", nl - 1, k.info[lhs].dtype)


rule("FullyConnected", "cuda", fc_tiled, epilogue=True, gathers=True)
rule("dot", "cuda", dot_tiled, epilogue=True, gathers=True)
