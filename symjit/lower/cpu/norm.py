"""CPU lowerings of BatchNorm and LayerNorm (records in :mod:`symjit.ops.norm`): the kernels of
:mod:`symjit.kernels.cpu.norm` through :mod:`symjit.kernels.cpu.norm_axis`, on the program's
arrays of any rank. ``eps``, ``momentum``, the axis and the flags are kernel arguments
(``KernelWriter.const``), so a kernel that is only that call is the building block itself
(``KernelWriter.direct``): layers differing in them, or in rank, compile nothing of their own."""
from __future__ import annotations

from ...ops.norm import bn_batch_stats
from ..emit import KCPU
from ..emit import rank_axis as _rank_axis
from ..rules import rule
from . import CPUTarget
from .threaded import threaded

NORM_AXIS = f"{KCPU}.norm_axis"


def _bn_call(k, fn: str, arrays: list[str], *consts) -> None:
    """A call of :mod:`symjit.kernels.cpu.norm_axis`'s ``fn`` on the program's arrays of any rank:
    the channel axis and the flags are kernel arguments, so a kernel that is only this call is the
    building block itself (``KernelWriter.direct``) and none is compiled per rank, axis or flags."""
    k.call(NORM_AXIS, fn, [*arrays, *(k.const(c) for c in consts)])


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


def ln_lower(k, node, ins, outs):
    """LayerNorm through :mod:`symjit.kernels.cpu.norm_axis` (a non-trailing axis through the
    workspace: the data's rows over it, then the result's)."""
    x, gamma, beta = ins
    out, mean, std = outs
    eps = k.const(float(node.params["eps"]))
    if not _ln_moved(node, k.info[x].shape):
        k.call(NORM_AXIS, "layernorm_forward", [x, gamma, beta, out, mean, std, eps])
        return
    ax = k.const(_rank_axis(k, node, x)[1])
    k.call(NORM_AXIS, "layernorm_forward_moved", [x, gamma, beta, out, mean, std, *k.workspace[:2], eps, ax])


def ln_backward_lower(k, node, ins, outs):
    dout, data, gamma, mean, std = ins
    dx, dgamma, dbeta = outs
    if not _ln_moved(node, k.info[data].shape):
        k.call(NORM_AXIS, "layernorm_backward", [data, dout, gamma, mean, std, dx, dgamma, dbeta])
        return
    ax = k.const(_rank_axis(k, node, data)[1])
    k.call(NORM_AXIS, "layernorm_backward_moved", [data, dout, gamma, mean, std, dx, dgamma, dbeta,
                                                   *k.workspace[:3], ax])


rule("BatchNorm", CPUTarget, bn_lower)
# the backward kernels read channel c of ograd and data completely before writing channel c of dx
rule("_backward_BatchNorm", CPUTarget, bn_backward_lower, inplace=((0, 0), (1, 0)))
rule("_backward_BatchNorm_relu", CPUTarget, bn_relu_backward_lower, inplace=((0, 0), (1, 0)))
rule("LayerNorm", CPUTarget, ln_lower, workspace=_ln_workspace(2))
rule("_backward_LayerNorm", CPUTarget, ln_backward_lower, workspace=_ln_workspace(3))
