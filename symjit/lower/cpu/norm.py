"""CPU lowerings of BatchNorm and LayerNorm (records in :mod:`symjit.ops.norm`): the kernels of
:mod:`symjit.kernels.cpu.norm` on ``(A, C, B)`` views around the channel axis."""
from __future__ import annotations

from ...ops.norm import bn_batch_stats
from ..emit import axis_view3, call, rows_view
from ..emit import rank_axis as _rank_axis
from ..rules import rule


def bn_lower(k, node, ins, outs):
    """Batch statistics (updating the aux moving stats in place) or the moving statistics."""
    p = node.params
    nd, ax = _rank_axis(k, node, ins[0])
    x, o = axis_view3(k, ins[0], ax, nd), axis_view3(k, outs[0], ax, nd)
    gamma, beta, mmean, mvar = ins[1:5]
    mean, var = outs[1], outs[2]
    if bn_batch_stats(node):
        call(k, "norm", "batchnorm_forward_train", x, gamma, beta, mmean, mvar, o, mean, var,
             repr(p["eps"]), repr(p["momentum"]), p["fix_gamma"], True)
    else:
        call(k, "norm", "batchnorm_forward_inference", x, gamma, beta, mmean, mvar, o, mean, var,
             repr(p["eps"]), p["fix_gamma"])


def bn_backward_lower(k, node, ins, outs):
    dout, data, gamma, mean, invstd = ins
    nd, ax = _rank_axis(k, node, data)
    x, g = axis_view3(k, data, ax, nd), axis_view3(k, dout, ax, nd)
    dx = axis_view3(k, outs[0], ax, nd)
    call(k, "norm", "batchnorm_backward", x, g, gamma, mean, invstd, dx, outs[1], outs[2],
         node.params["fix_gamma"], bn_batch_stats(node))


def bn_relu_backward_lower(k, node, ins, outs):
    dout, data, gamma, beta, mean, invstd = ins
    nd, ax = _rank_axis(k, node, data)
    x, g = axis_view3(k, data, ax, nd), axis_view3(k, dout, ax, nd)
    dx = axis_view3(k, outs[0], ax, nd)
    call(k, "norm", "batchnorm_relu_backward", x, g, gamma, beta, mean, invstd, dx, outs[1], outs[2],
         node.params["fix_gamma"], bn_batch_stats(node))


def _ln_rows(k, node, x: str, others: list[str]) -> tuple[list[str], str | None]:
    """(M, K) row views of ``x`` and ``others`` (same shape as x) for LayerNorm's kernels.

    A non-trailing axis is moved last by contiguous copies; returns the 3-D view source of x's
    shape (``A, B, K``) used to move results back, or None when no copy was needed."""
    nd, ax = _rank_axis(k, node, x)
    if ax == nd - 1:
        return [rows_view(k, a) for a in (x, *others)], None
    views = []
    for a in (x, *others):
        v3, vt = axis_view3(k, a, ax, nd), k.tmp("t")
        k.line(f"{vt} = np.ascontiguousarray({v3}.transpose(0, 2, 1)).reshape(-1, {v3}.shape[1])")
        views.append(vt)
    return views, views[0]


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
    orow = rows_view(k, out) if moved is None else k.tmp("o")
    if moved is not None:
        k.line(f"{orow} = np.empty_like({xr})")
    call(k, "norm", "layernorm_forward", xr, gamma, beta, orow, f"{mean}.reshape(-1)",
         f"{std}.reshape(-1)", repr(node.params["eps"]))
    if moved is not None:
        _ln_store(k, node, out, orow)


def ln_backward_lower(k, node, ins, outs):
    dout, data, gamma, mean, std = ins
    dx, dgamma, dbeta = outs
    (xr, gr), moved = _ln_rows(k, node, data, [dout])
    dxr = rows_view(k, dx) if moved is None else k.tmp("d")
    if moved is not None:
        k.line(f"{dxr} = np.empty_like({xr})")
    call(k, "norm", "layernorm_backward", xr, gr, gamma, f"{mean}.reshape(-1)", f"{std}.reshape(-1)",
         dxr, dgamma, dbeta)
    if moved is not None:
        _ln_store(k, node, dx, dxr)


rule("BatchNorm", "cpu", bn_lower)
# the backward kernels read channel c of ograd and data completely before writing channel c of dx
rule("_backward_BatchNorm", "cpu", bn_backward_lower, inplace=((0, 0), (1, 0)))
rule("_backward_BatchNorm_relu", "cpu", bn_relu_backward_lower, inplace=((0, 0), (1, 0)))
rule("LayerNorm", "cpu", ln_lower)
rule("_backward_LayerNorm", "cpu", ln_backward_lower)
