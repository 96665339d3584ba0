"""Lowering of the internal ``_image_adjust_hue`` (:mod:`symjit.ops.image_ops`): a loop over the
pixels, each converted to HLS, shifted and converted back by
:func:`~symjit.ops.image_ops.hue_shift_pixel` (wrapped per target).

>>> import numpy as np, symjit as mx
>>> img = mx.nd.array(np.array([[[255.0, 0.0, 0.0]]]))           # red, hue 0
>>> mx.nd.image.random_hue(img, 1 / 3, 1 / 3).asnumpy().round(2).tolist()  # shifted a third: green
[[[0.0, 255.0, 0.0]]]
"""
from __future__ import annotations

from ..ops.image_ops import hue_shift_pixel
from .rules import ANY, rule

__all__: list[str] = []


def _adjust_hue(k, node, ins, outs) -> None:
    h, w, _ = k.info[ins[0]].shape
    x, out = k.tmp("x"), k.tmp("o")
    k.line(f"{x} = {ins[0]}.reshape({h * w}, 3)")
    k.line(f"{out} = {outs[0]}.reshape({h * w}, 3)")
    target = k.target
    idx = target.open_loop(k, [str(h * w)])
    k.line(f"{k.module.body(hue_shift_pixel)}({x}, {out}, {idx[0]}, {ins[1]}[0])")
    target.close_loop(k, idx)


rule("_image_adjust_hue", ANY, _adjust_hue)
