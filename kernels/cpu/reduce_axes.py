"""Which axes a reduction to an output of its input's rank reduces, read from the two shapes: plain
Python (no numba), so the interpreted tier runs it as it is and importing it compiles nothing;
:mod:`symjit.kernels.cpu.reduce` compiles it (``reduce_block``) for the kernels.
"""
from __future__ import annotations

__all__ = ["reduce_block_of"]


def reduce_block_of(xshape, oshape):
    """``(True, A, R, B)`` when reducing an input of shape ``xshape`` to ``oshape`` (the same rank,
    size 1 on the reduced axes) reduces one block of adjacent axes (size-1 axes aside), so the
    input is an ``(A, R, B)`` view; ``(False, 0, 0, 0)`` when the reduced axes are apart, or reduce
    nothing (``R == 0``). The reduced axes are read from the shapes, so a kernel calling it serves
    every reduction of its rank.

    >>> reduce_block_of((2, 3, 4), (2, 1, 1)), reduce_block_of((2, 3, 4), (1, 3, 1))
    ((True, 2, 12, 1), (False, 0, 0, 0))
    """
    n = len(xshape)
    lo, hi = n, -1
    for d in range(n):
        if xshape[d] != 1 and oshape[d] == 1:
            lo = min(lo, d)
            hi = d
    if hi < 0:
        lo, hi = n, n - 1
    a, r, b = 1, 1, 1
    for d in range(n):
        if d < lo:
            a *= xshape[d]
        elif d > hi:
            b *= xshape[d]
        elif xshape[d] != 1 and oshape[d] != 1:
            return False, 0, 0, 0
        else:
            r *= xshape[d]
    if r == 0:
        return False, 0, 0, 0
    return True, a, r, b
