"""CUDA lowering of the reductions sum, mean, max, min, nansum, prod and nanprod: a block per
output element when the reduced slices are long, else a thread per output element.

A thread per output element (the target-neutral rule, :mod:`symjit.lower.accumulate`) leaves a
GPU idle when there are few outputs (a full sum is one thread). With :func:`use_block` true, each
block takes an output element (blocks stride over them), its threads stride over the slice and
accumulate as the neutral rule does (NaNs skipped by nansum/nanprod), and the block combines the
partial values in shared memory (:func:`symjit.kernels.cuda.reduce.block_reduce`); thread 0 writes
the element.
"""
from __future__ import annotations

from ...kernels.cuda import MAX_SHARED
from ...ops.reduce import reduced_axes
from ...ops.rules import prod
from ..accumulate import REDUCE_STEP, init_value, input_index, reduce_elements
from ..emit import decode_flat
from ..rules import rule
from . import CUDATarget

# how the block combines the threads' partial values
_COMBINE = {"sum": "SUM", "mean": "SUM", "nansum": "SUM", "prod": "PROD", "nanprod": "PROD",
            "max": "MAX", "min": "MIN"}


def use_block(extent: int, outputs: int) -> bool:
    """A block per output element for slices of at least 32 elements, or of 8 when there are at
    most 64 outputs (else a thread per output keeps more of the GPU busy).

    >>> use_block(1000, 10**6), use_block(8, 10), use_block(8, 1000), use_block(4, 1)
    (True, True, False, False)
    """
    return extent >= 32 or (extent >= 8 and outputs <= 64)


def _reduce_block(name: str):
    per_element = reduce_elements(name)

    def emit(k, node, ins, outs):
        x, out = ins[0], outs[0]
        p = node.params
        shape = k.info[x].shape
        axes = reduced_axes(shape, p["axis"], p["exclude"])
        extent, n_out = prod(shape[d] for d in axes), prod(k.info[out].shape)
        if not use_block(extent, n_out):
            return per_element(k, node, ins, outs)
        nd, nd_out = len(shape), len(k.info[out].shape)
        buf, reduce_ = k.tmp("sh"), k.imp("symjit.kernels.cuda.reduce", "block_reduce")
        kind = k.imp("symjit.kernels.cuda.reduce", _COMBINE[name])
        k.line(f"{buf} = cuda.shared.array({MAX_SHARED}, numba.float64)")
        k.per_block = (f"{out}.size", n_out)
        o, e, acc, v = k.tmp("o"), k.tmp("e"), k.tmp("acc"), k.tmp("x")
        k.line(f"for {o} in range(cuda.blockIdx.x, {out}.size, cuda.gridDim.x):")
        k.indent += 1
        idx = decode_flat(k, o, [f"{out}.shape[{d}]" for d in range(nd_out)])
        k.line(f"{acc} = {init_value(name, k.info[out].dtype)}")
        k.line(f"for {e} in range(cuda.threadIdx.x, {extent}, cuda.blockDim.x):")
        k.indent += 1
        red = decode_flat(k, e, [f"{x}.shape[{d}]" for d in axes])
        k.line(f"{v} = {x}[{input_index(idx, axes, nd, p['keepdims'], red)}]")
        k.line(REDUCE_STEP[name].format(o=acc, x=v))
        k.indent -= 1
        total = k.tmp("total")
        k.line(f"{total} = {reduce_}({buf}, {acc}, {kind})")
        k.line("if cuda.threadIdx.x == 0:")
        value = f"{total} / {extent}" if name == "mean" else total
        k.line(f"    {out}[{', '.join(idx)}] = {value}")
        k.indent -= 1
        return None
    return emit


for _name in _COMBINE:
    rule(_name, CUDATarget, _reduce_block(_name))
