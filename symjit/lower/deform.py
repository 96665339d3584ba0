"""Target-neutral lowering of deformable convolution's column op (:mod:`symjit.ops.deform`): the
forward loops over column elements, the backward over the data gradient's (image, channel) maps and
over the offset (and mask) gradient's elements, each computed by a routine of
:mod:`symjit.ops.deform_kernels` (an unmodulated op passes the offset where the mask would go: the
routines never read it then).

>>> import numpy as np, symjit as mx
>>> x = mx.nd.array(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3))
>>> off = mx.nd.array(np.full((1, 2, 3, 3), 0.5, np.float32))       # every tap moved by half a pixel
>>> w = mx.nd.ones((1, 1, 1, 1))
>>> y = mx.nd.contrib.DeformableConvolution(x, off, w, kernel=(1, 1), num_filter=1, no_bias=True)
>>> y.asnumpy()[0, 0, 0].tolist()               # DCN v1 clamps the last column's samples onto it
[2.0, 3.0, 3.5]
>>> m = mx.nd.ones((1, 1, 3, 3))
>>> y = mx.nd.contrib.ModulatedDeformableConvolution(x, off, m, w, kernel=(1, 1), num_filter=1, no_bias=True)
>>> y.asnumpy()[0, 0, 0].tolist()               # DCN v2 reads zeros past it
[2.0, 3.0, 1.75]
"""
from __future__ import annotations

from ..ops import deform_kernels as dk
from ..ops.deform import _geometry, _out_hw
from .rules import ANY, rule

__all__: list[str] = []


def _consts(k, node, data: str) -> tuple[list[str], bool]:
    p = node.params
    kernel, stride, dilate, pad = _geometry(p)
    shape = k.info[data].shape
    oh, ow = _out_hw(shape, p)
    group_c = shape[1] // p["num_deformable_group"]
    values = (*kernel, *stride, pad[0], pad[1], dilate[0], dilate[1], oh, ow, group_c)
    return [str(v) for v in values], bool(p["modulated"])


def _forward(k, node, ins, outs) -> None:
    data, offset = ins[0], ins[1]
    mask = ins[2] if node.params["modulated"] else offset
    consts, modulated = _consts(k, node, data)
    rows, cols = k.info[outs[0]].shape
    target = k.target
    idx = target.open_loop(k, [str(rows), str(cols)])
    k.line(f"{k.module.body(dk.deform_col_element)}({data}, {offset}, {mask}, {outs[0]}, {idx[0]}, {idx[1]}, "
           f"{', '.join(consts)}, {modulated})")
    target.close_loop(k, idx)


def _backward(k, node, ins, outs) -> None:
    g, data, offset = ins[0], ins[1], ins[2]
    modulated = bool(node.params["modulated"])
    mask = ins[3] if modulated else offset
    consts, _ = _consts(k, node, data)
    n, c = k.info[data].shape[:2]
    target = k.target
    idx = target.open_loop(k, [str(n), str(c)])
    k.line(f"{k.module.body(dk.deform_data_backward)}({g}, {offset}, {mask}, {outs[0]}, {idx[0]}, {idx[1]}, "
           f"{', '.join(consts)}, {modulated})")
    target.close_loop(k, idx)
    idx = target.open_loop(k, [str(d) for d in k.info[offset].shape])
    k.line(f"{k.module.body(dk.deform_offset_backward)}({g}, {data}, {offset}, {mask}, {outs[1]}, "
           f"{', '.join(idx)}, {', '.join(consts)}, {modulated})")
    target.close_loop(k, idx)
    if modulated:
        idx = target.open_loop(k, [str(d) for d in k.info[mask].shape])
        k.line(f"{k.module.body(dk.deform_mask_backward)}({g}, {data}, {offset}, {outs[2]}, "
               f"{', '.join(idx)}, {', '.join(consts)})")
        target.close_loop(k, idx)


rule("_deformable_im2col", ANY, _forward)
rule("_backward_deformable_im2col", ANY, _backward)
