"""Block reductions for CUDA kernels that work one block per slice (a channel, a row).

Every thread of the block calls :func:`block_sum` with its partial value and gets the block's
total; ``buf`` is the kernel's ``cuda.shared.array(MAX_SHARED, float64)``. All threads of the block
must reach the call (it synchronises them), so callers loop over slices uniformly per block.
"""
from __future__ import annotations

from numba import cuda

__all__ = ["block_sum"]


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
