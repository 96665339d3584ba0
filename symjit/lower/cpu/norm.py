"""CPU lowerings of BatchNorm and LayerNorm (records in :mod:`symjit.ops.norm`): the kernels of
:mod:`symjit.kernels.cpu.norm` on ``(A, C, B)`` views around the channel axis. ``eps`` and
``momentum`` are kernel arguments (``KernelWriter.const``), so layers differing only in them share
one kernel."""
from __future__ import annotations

from ...ops.norm import bn_batch_stats
from ..emit import KCPU, axis_view3, call, rows_view
from ..emit import rank_axis as _rank_axis
from ..rules import rule
from . import CPUTarget
from .threaded import threaded


def _bn_call(k, fn: str, arrays: list[str], *consts) -> None:
    """A call of :mod:`symjit.kernels.cpu.norm_axis`'s ``fn`` on the program's arrays of any rank:
    the channel axis and the flags are kernel arguments, so a kernel that is only this call is the
    building block itself (``KernelWriter.direct``) and none is compiled per rank, axis or flags."""
    k.call(f"{KCPU}.norm_axis", fn, [*arrays, *(k.const(c) for c in consts)])


def bn_lower(k, node, ins, outs):
    """Batch statistics (updating the aux moving stats in place) or the moving statistics."""
    p = node.params
    _, ax = _rank_axis(k, node, ins[0])
    arrays = [ins[0], *ins[1:5], outs[0], outs[1], outs[2]]
    par = threaded(k, ins[0])
    if bn_batch_stats(node):
        _bn_call(k, "batchnorm_forward_train" + par, arrays, float(p["eps"]), float(p["momentum"]), ax,
                 int(p["fix_gamma"]), 1)
    else:
        _bn_call(k, "batchnorm_forward_inference" + par, arrays, float(p["eps"]), ax, int(p["fix_gamma"]))


def bn_backward_lower(k, node, ins, outs):
    dout, data, gamma, mean, invstd = ins
    _, ax = _rank_axis(k, node, data)
    _bn_call(k, "batchnorm_backward" + threaded(k, data), [data, dout, gamma, mean, invstd, *outs[:3]], ax,
             int(node.params["fix_gamma"]), int(bn_batch_stats(node)))


def bn_relu_backward_lower(k, node, ins, outs):
    dout, data, gamma, beta, mean, invstd = ins
    _, ax = _rank_axis(k, node, data)
    _bn_call(k, "batchnorm_relu_backward" + threaded(k, data), [data, dout, gamma, beta, mean, invstd,
                                                                  *outs[:3]],
             ax, int(node.params["fix_gamma"]), int(bn_batch_stats(node)))


def _ln_moved(node, shape: tuple) -> bool:
    """True when LayerNorm's axis is not the last one (its kernels then run on transposed copies)."""
    return node.params["axis"] % len(shape) != len(shape) - 1


def _ln_workspace(n_rows: int):
    """Workspace rule: with a non-trailing axis, ``n_rows`` buffers shaped like data (the inputs
    moved to (A*B, K) rows, then the rows of the result)."""
    def workspace(node, ins, outs):
        data = ins[0] if len(ins) == 3 else ins[1]
        return [(data.shape, data.dtype)] * n_rows if _ln_moved(node, data.shape) else []
    return workspace


def _ln_rows(k, node, x: str, others: list[str]) -> tuple[list[str], str | None]:
    """(M, K) row views of ``x`` and ``others`` (same shape as x) for LayerNorm's kernels.

    A non-trailing axis is moved last by copies into the workspace buffers (in order); returns
    the rows and the name of a further workspace rows view for the result, or None when no copy
    was needed."""
    nd, ax = _rank_axis(k, node, x)
    if not _ln_moved(node, k.info[x].shape):
        return [rows_view(k, a) for a in (x, *others)], None
    rows = []
    for a, ws in zip((x, *others), k.workspace):
        v3, t3, vt = axis_view3(k, a, ax, nd), k.tmp("t"), k.tmp("r")
        k.line(f"{t3} = {ws}.reshape({v3}.shape[0], {v3}.shape[2], {v3}.shape[1])")
        k.line(f"{t3}[:, :, :] = {v3}.transpose(0, 2, 1)")
        k.line(f"{vt} = {t3}.reshape(-1, {v3}.shape[1])")
        rows.append(vt)
    result = k.tmp("o")
    k.line(f"{result} = {k.workspace[len(rows)]}.reshape({rows[0]}.shape)")
    return rows, result


def _ln_store(k, node, dest: str, rows: str) -> None:
    """Copy the (A*B, K) rows back into ``dest`` laid out as (A, K, B)."""
    nd, ax = _rank_axis(k, node, dest)
    d3 = axis_view3(k, dest, ax, nd)
    k.line(f"{d3}[:, :, :] = {rows}.reshape({d3}.shape[0], {d3}.shape[2], {d3}.shape[1])"
           ".transpose(0, 2, 1)")


def ln_lower(k, node, ins, outs):
    x, gamma, beta = ins
    out, mean, std = outs
    (xr,), moved = _ln_rows(k, node, x, [])
    orow = rows_view(k, out) if moved is None else moved
    call(k, "norm", "layernorm_forward", xr, gamma, beta, orow, f"{mean}.reshape(-1)",
         f"{std}.reshape(-1)", k.const(float(node.params["eps"])))
    if moved is not None:
        _ln_store(k, node, out, orow)


def ln_backward_lower(k, node, ins, outs):
    dout, data, gamma, mean, std = ins
    dx, dgamma, dbeta = outs
    (xr, gr), moved = _ln_rows(k, node, data, [dout])
    dxr = rows_view(k, dx) if moved is None else moved
    call(k, "norm", "layernorm_backward", xr, gr, gamma, f"{mean}.reshape(-1)", f"{std}.reshape(-1)",
         dxr, dgamma, dbeta)
    if moved is not None:
        _ln_store(k, node, dx, dxr)


rule("BatchNorm", CPUTarget, bn_lower)
# the backward kernels read channel c of ograd and data completely before writing channel c of dx
rule("_backward_BatchNorm", CPUTarget, bn_backward_lower, inplace=((0, 0), (1, 0)))
rule("_backward_BatchNorm_relu", CPUTarget, bn_relu_backward_lower, inplace=((0, 0), (1, 0)))
rule("LayerNorm", CPUTarget, ln_lower, workspace=_ln_workspace(2))
rule("_backward_LayerNorm", CPUTarget, ln_backward_lower, workspace=_ln_workspace(3))
