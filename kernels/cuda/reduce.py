"""Block reductions for CUDA kernels that work one block per slice (a channel, a row, an output
element of a reduction).

Every thread of the block calls :func:`block_reduce` (or :func:`block_sum`) with its partial value
and gets the block's result; ``buf`` is the kernel's ``cuda.shared.array(MAX_SHARED, float64)``
(so values pass through float64: integers beyond 2**53 round). All threads of the block must reach
the call (it synchronises them), so callers loop over slices uniformly per block. The combining
step is one of :data:`SUM`, :data:`PROD`, :data:`MAX`, :data:`MIN`; a NaN wins max and min, as on
the CPU.
"""
from __future__ import annotations

from numba import cuda

__all__ = ["block_sum", "block_reduce", "SUM", "PROD", "MAX", "MIN"]

SUM, PROD, MAX, MIN = 0, 1, 2, 3


@cuda.jit(device=True)
def _combine(a, b, kind):
    if kind == SUM:
        return a + b
    if kind == PROD:
        return a * b
    if kind == MAX:
        return a if (a > b or a != a) else b
    return a if (a < b or a != a) else b


@cuda.jit(device=True)
def block_reduce(buf, v, kind):
    """``v`` combined over the threads of the block by ``kind`` (a tree in shared memory)."""
    t = cuda.threadIdx.x
    n = cuda.blockDim.x
    buf[t] = v
    cuda.syncthreads()
    half = 1
    while half < n:
        half *= 2
    half //= 2
    while half > 0:
        if t < half and t + half < n:
            buf[t] = _combine(buf[t], buf[t + half], kind)
        cuda.syncthreads()
        half //= 2
    total = buf[0]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def block_sum(buf, v):
    """The sum of ``v`` over the threads of the block (a tree in shared memory, float64)."""
    t = cuda.threadIdx.x
    n = cuda.blockDim.x
    buf[t] = v
    cuda.syncthreads()
    half = 1
    while half < n:
        half *= 2
    half //= 2
    while half > 0:
        if t < half and t + half < n:
            buf[t] += buf[t + half]
        cuda.syncthreads()
        half //= 2
    total = buf[0]
    cuda.syncthreads()
    return total
