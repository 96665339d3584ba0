"""The CUDA lowering of Dropout (record in :mod:`symjit.ops.nn`): no RNG state on the device.

Each launch gets a fresh seed from the host (``symjit.random.next_seed``, so ``mx.random.seed``
makes masks reproducible), and every element's mask value is a hash of the seed and the mask
element's flat index (:func:`symjit.ops.nn.dropout_hash_scale`). Any thread can therefore compute
any mask element: the output loop writes ``mask`` and ``x * mask`` in one pass (with ``axes``,
threads sharing a mask element write the same value), and elementwise consumers fuse into it.
"""
from __future__ import annotations

from ...ops.nn import dropout_active, dropout_hash_scale
from ..emit import elem_index, flat_index
from ..rules import rule
from . import CUDATarget


def dropout_cuda(k, node, ins, outs):
    x, mask = ins[0], outs[1]
    active = dropout_active(node)
    if active:
        seed = k.tmp("seed")
        k.params.append(seed)
        k.host_args.append((seed, "symjit.random", "next_seed"))
        scale = k.module.body(dropout_hash_scale)
    mshape, oshape = k.info[mask].shape, k.info[outs[0]].shape
    p = float(node.params["p"])

    def expr(idx: list[str]) -> str:
        midx = ["0" if m == 1 and o != 1 else i for i, m, o in zip(idx, mshape, oshape)]
        m = k.tmp("mk")
        k.line(f"{m} = {scale}({seed}, {flat_index(midx, mask)}, {p!r})" if active else f"{m} = 1.0")
        k.line(f"{mask}[{elem_index(midx)}] = {m}")
        return f"{x}[{elem_index(idx)}] * {m}"
    return expr


# each element reads x[i] before it writes out[i] (same thread)
rule("Dropout", CUDATarget, dropout_cuda, epilogue=True, inplace=((0, 0),))
