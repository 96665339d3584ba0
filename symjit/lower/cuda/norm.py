"""CUDA lowerings of BatchNorm and LayerNorm (records in :mod:`symjit.ops.norm`): one block per
channel (BatchNorm) or per row (LayerNorm), the statistics by block reductions in shared memory
(:func:`symjit.kernels.cuda.reduce.block_sum`, float64 sums as on the CPU), then the block writes
its slice. The formulas and saved statistics are the CPU kernels' (:mod:`symjit.kernels.cpu.norm`):
BatchNorm saves the mean and the inverse std, LayerNorm the mean and the std.

A block reads every element of its slice before any thread writes one (the reduction
synchronises the block), and each thread writes only elements it read itself, so BatchNorm's
backward may overwrite its ``dout``/``data`` input in place as on the CPU.
"""
from __future__ import annotations

import math

from ...kernels.cuda import MAX_SHARED
from ...ops.norm import bn_batch_stats
from ..emit import axis_view3, dims, rank_axis
from ..rules import rule
from . import CUDATarget


def _shared(k) -> tuple[str, str]:
    """Emit the kernel's shared reduction buffer; return (buffer, block_sum alias)."""
    buf = k.tmp("sh")
    k.line(f"{buf} = cuda.shared.array({MAX_SHARED}, numba.float64)")
    return buf, k.imp("symjit.kernels.cuda.reduce", "block_sum")


def _slices(k, count: str, static: int) -> str:
    """Open the loop of this block over ``count`` slices (blocks stride when there are more);
    returns the slice index."""
    k.per_block = (count, static)
    s = k.tmp("s")
    k.line(f"for {s} in range(cuda.blockIdx.x, {count}, cuda.gridDim.x):")
    k.indent += 1
    return s


def _each(k, x3: str, n: str) -> tuple[str, str]:
    """Open this thread's strided loop over the ``n`` (A*B) positions of a channel of the
    ``(A, C, B)`` view ``x3``; returns the (a, b) index names."""
    e, a, b = k.tmp("e"), k.tmp("a"), k.tmp("b")
    k.line(f"for {e} in range(cuda.threadIdx.x, {n}, cuda.blockDim.x):")
    k.indent += 1
    k.line(f"{a} = {e} // {x3}.shape[2]")
    k.line(f"{b} = {e} % {x3}.shape[2]")
    return a, b


def _channel_count(k, node, data: str) -> tuple[int, int, str, int]:
    nd, ax = rank_axis(k, node, data)
    return nd, ax, f"{data}.shape[{ax}]", k.info[data].shape[ax]


def bn_cuda(k, node, ins, outs):
    p = node.params
    nd, ax, count, static = _channel_count(k, node, ins[0])
    x, o = axis_view3(k, ins[0], ax, nd), axis_view3(k, outs[0], ax, nd)
    gamma, beta, mmean, mvar = ins[1:5]
    buf, bsum = _shared(k)
    m = k.tmp("m")
    k.line(f"{m} = {x}.shape[0] * {x}.shape[2]")
    c = _slices(k, count, static)
    mean, inv, acc = k.tmp("mean"), k.tmp("inv"), k.tmp("acc")
    if bn_batch_stats(node):
        k.line(f"{acc} = 0.0")
        a, b = _each(k, x, m)
        k.line(f"{acc} += {x}[{a}, {c}, {b}]")
        k.indent -= 1
        k.line(f"{mean} = {bsum}({buf}, {acc}) / {m}")
        k.line(f"{acc} = 0.0")
        a, b = _each(k, x, m)
        k.line(f"{acc} += ({x}[{a}, {c}, {b}] - {mean}) * ({x}[{a}, {c}, {b}] - {mean})")
        k.indent -= 1
        var = k.tmp("var")
        k.line(f"{var} = {bsum}({buf}, {acc}) / {m}")
        k.line("if cuda.threadIdx.x == 0:")
        mom = repr(p["momentum"])
        k.line(f"    {mmean}[{c}] = {mmean}[{c}] * {mom} + {mean} * (1.0 - {mom})")
        k.line(f"    {mvar}[{c}] = {mvar}[{c}] * {mom} + {var} * (1.0 - {mom})")
    else:
        k.line(f"{mean} = {mmean}[{c}] * 1.0")
        var = k.tmp("var")
        k.line(f"{var} = {mvar}[{c}] * 1.0")
    k.line(f"{inv} = 0.0 if {var} + {p['eps']!r} == 0.0 else 1.0 / math.sqrt({var} + {p['eps']!r})")
    saved = k.info[outs[1]].dtype
    if saved.itemsize < 8:   # normalise with the statistics as saved, which the gradients read
        k.line(f"{mean} = np.{saved.name}({mean}) * 1.0")
        k.line(f"{inv} = np.{saved.name}({inv}) * 1.0")
    scale = k.tmp("scale")
    g = "1.0" if p["fix_gamma"] else f"{gamma}[{c}]"
    k.line(f"{scale} = {g} * {inv}")
    a, b = _each(k, x, m)
    k.line(f"{o}[{a}, {c}, {b}] = ({x}[{a}, {c}, {b}] - {mean}) * {scale} + {beta}[{c}]")
    k.indent -= 1
    k.line("if cuda.threadIdx.x == 0:")
    k.line(f"    {outs[1]}[{c}] = {mean}")
    k.line(f"    {outs[2]}[{c}] = {inv}")


def _bn_backward(relu: bool):
    def emit(k, node, ins, outs):
        if relu:
            dout, data, gamma, beta, smean, sinv = ins
        else:
            dout, data, gamma, smean, sinv = ins
        fix = node.params["fix_gamma"]
        nd, ax, count, static = _channel_count(k, node, data)
        x, dy, dx = (axis_view3(k, a, ax, nd) for a in (data, dout, outs[0]))
        buf, bsum = _shared(k)
        m = k.tmp("m")
        k.line(f"{m} = {x}.shape[0] * {x}.shape[2]")
        c = _slices(k, count, static)
        mean, inv, scale, bias = k.tmp("mean"), k.tmp("inv"), k.tmp("scale"), k.tmp("bias")
        k.line(f"{mean} = {smean}[{c}] * 1.0")
        k.line(f"{inv} = {sinv}[{c}] * 1.0")
        k.line(f"{scale} = {'1.0' if fix else f'{gamma}[{c}] * 1.0'} * {inv}")
        if relu:
            k.line(f"{bias} = {beta}[{c}] * 1.0")

        def grad(a: str, b: str, d: str, gv: str) -> None:
            k.line(f"{d} = {x}[{a}, {c}, {b}] - {mean}")
            k.line(f"{gv} = {dy}[{a}, {c}, {b}] * 1.0")
            if relu:   # the relu mask, recomputed from the forward's formula
                k.line(f"if {d} * {scale} + {bias} <= 0:")
                k.line(f"    {gv} = 0.0")

        sg, dp, d, gv = k.tmp("sg"), k.tmp("dp"), k.tmp("d"), k.tmp("g")
        k.line(f"{sg} = 0.0")
        k.line(f"{dp} = 0.0")
        a, b = _each(k, x, m)
        grad(a, b, d, gv)
        k.line(f"{sg} += {gv}")
        k.line(f"{dp} += {gv} * {d}")
        k.indent -= 1
        k.line(f"{sg} = {bsum}({buf}, {sg})")
        k.line(f"{dp} = {bsum}({buf}, {dp})")
        kk, gm = k.tmp("k"), k.tmp("gm")
        if bn_batch_stats(node):
            k.line(f"{kk} = {dp} * {inv} * {inv} / {m} if {m} > 0 else 0.0")
            k.line(f"{gm} = {sg} / {m} if {m} > 0 else 0.0")
        else:
            k.line(f"{kk} = 0.0")
            k.line(f"{gm} = 0.0")
        a, b = _each(k, x, m)
        grad(a, b, d, gv)
        k.line(f"{dx}[{a}, {c}, {b}] = ({gv} - {gm} - {d} * {kk}) * {scale}")
        k.indent -= 1
        k.line("if cuda.threadIdx.x == 0:")
        k.line(f"    {outs[1]}[{c}] = {'0.0' if fix else f'{dp} * {inv}'}")
        k.line(f"    {outs[2]}[{c}] = {sg}")
    return emit


def _rows(k, node, data: str) -> tuple[int, int, str, int]:
    """(rank, axis, source of the row count, static row count) of LayerNorm's data."""
    nd, ax = rank_axis(k, node, data)
    shape = k.info[data].shape
    others = [d for d in range(nd) if d != ax]
    return nd, ax, dims(data, others) if others else "1", math.prod(shape[d] for d in others)


def _row_of(k, x3: str, r: str) -> tuple[str, str]:
    a, b = k.tmp("a"), k.tmp("b")
    k.line(f"{a} = {r} // {x3}.shape[2]")
    k.line(f"{b} = {r} % {x3}.shape[2]")
    return a, b


def _along(k, n: str) -> str:
    j = k.tmp("j")
    k.line(f"for {j} in range(cuda.threadIdx.x, {n}, cuda.blockDim.x):")
    k.indent += 1
    return j


def ln_cuda(k, node, ins, outs):
    x_, gamma, beta = ins
    nd, ax, rows, static = _rows(k, node, x_)
    x, o = axis_view3(k, x_, ax, nd), axis_view3(k, outs[0], ax, nd)
    mean3, std3 = (axis_view3(k, v, ax, nd, mid="1") for v in outs[1:])
    buf, bsum = _shared(k)
    r = _slices(k, rows, static)
    a, b = _row_of(k, x, r)
    n, acc, mean, std, inv = (k.tmp(t) for t in ("n", "acc", "mean", "std", "inv"))
    k.line(f"{n} = {x}.shape[1]")
    k.line(f"{acc} = 0.0")
    j = _along(k, n)
    k.line(f"{acc} += {x}[{a}, {j}, {b}]")
    k.indent -= 1
    k.line(f"{mean} = {bsum}({buf}, {acc}) / {n}")
    k.line(f"{acc} = 0.0")
    j = _along(k, n)
    k.line(f"{acc} += ({x}[{a}, {j}, {b}] - {mean}) * ({x}[{a}, {j}, {b}] - {mean})")
    k.indent -= 1
    k.line(f"{std} = math.sqrt({bsum}({buf}, {acc}) / {n} + {node.params['eps']!r})")
    k.line(f"{inv} = 0.0 if {std} == 0.0 else 1.0 / {std}")
    j = _along(k, n)
    k.line(f"{o}[{a}, {j}, {b}] = ({x}[{a}, {j}, {b}] - {mean}) * {inv} * {gamma}[{j}] + {beta}[{j}]")
    k.indent -= 1
    k.line("if cuda.threadIdx.x == 0:")
    k.line(f"    {mean3}[{a}, 0, {b}] = {mean}")
    k.line(f"    {std3}[{a}, 0, {b}] = {std}")


def ln_backward_cuda(k, node, ins, outs):
    """Blocks ``0..R-1`` write ``dx`` of one row each; blocks ``R..R+K-1`` sum ``dgamma``/``dbeta``
    of one column each over the rows (independent work, one launch)."""
    dout, data, gamma, smean, sstd = ins
    nd, ax, rows, static = _rows(k, node, data)
    x, dy, dx = (axis_view3(k, v, ax, nd) for v in (data, dout, outs[0]))
    mean3, std3 = (axis_view3(k, v, ax, nd, mid="1") for v in (smean, sstd))
    buf, bsum = _shared(k)
    nrows, n = k.tmp("R"), k.tmp("n")
    k.line(f"{nrows} = {rows}")
    k.line(f"{n} = {x}.shape[1]")
    u = _slices(k, f"{rows} + {data}.shape[{ax}]", static + k.info[data].shape[ax])
    mean, inv, sg, sgx, xh, gv = (k.tmp(t) for t in ("mean", "inv", "sg", "sgx", "xh", "g"))

    def stats(a: str, b: str) -> None:
        k.line(f"{mean} = {mean3}[{a}, 0, {b}] * 1.0")
        k.line(f"{inv} = 0.0 if {std3}[{a}, 0, {b}] == 0.0 else 1.0 / {std3}[{a}, 0, {b}]")

    k.line(f"if {u} < {nrows}:")
    k.indent += 1
    a, b = _row_of(k, x, u)
    stats(a, b)
    k.line(f"{sg} = 0.0")
    k.line(f"{sgx} = 0.0")
    j = _along(k, n)
    k.line(f"{xh} = ({x}[{a}, {j}, {b}] - {mean}) * {inv}")
    k.line(f"{gv} = {dy}[{a}, {j}, {b}] * {gamma}[{j}] * 1.0")
    k.line(f"{sg} += {gv}")
    k.line(f"{sgx} += {gv} * {xh}")
    k.indent -= 1
    k.line(f"{sg} = {bsum}({buf}, {sg}) / {n}")
    k.line(f"{sgx} = {bsum}({buf}, {sgx}) / {n}")
    j = _along(k, n)
    k.line(f"{xh} = ({x}[{a}, {j}, {b}] - {mean}) * {inv}")
    k.line(f"{dx}[{a}, {j}, {b}] = ({dy}[{a}, {j}, {b}] * {gamma}[{j}] - {sg} - {xh} * {sgx}) * {inv}")
    k.indent -= 2
    k.line("else:")
    k.indent += 1
    col, dg, db = k.tmp("col"), k.tmp("dg"), k.tmp("db")
    k.line(f"{col} = {u} - {nrows}")
    k.line(f"{dg} = 0.0")
    k.line(f"{db} = 0.0")
    r = _along(k, nrows)
    a, b = _row_of(k, x, r)
    stats(a, b)
    k.line(f"{gv} = {dy}[{a}, {col}, {b}] * 1.0")
    k.line(f"{dg} += {gv} * ({x}[{a}, {col}, {b}] - {mean}) * {inv}")
    k.line(f"{db} += {gv}")
    k.indent -= 1
    k.line(f"{dg} = {bsum}({buf}, {dg})")
    k.line(f"{db} = {bsum}({buf}, {db})")
    k.line("if cuda.threadIdx.x == 0:")
    k.line(f"    {outs[1]}[{col}] = {dg}")
    k.line(f"    {outs[2]}[{col}] = {db}")


rule("BatchNorm", CUDATarget, bn_cuda)
rule("_backward_BatchNorm", CUDATarget, _bn_backward(False), inplace=((0, 0), (1, 0)))
rule("_backward_BatchNorm_relu", CUDATarget, _bn_backward(True), inplace=((0, 0), (1, 0)))
rule("LayerNorm", CUDATarget, ln_cuda)
rule("_backward_LayerNorm", CUDATarget, ln_backward_cuda)
