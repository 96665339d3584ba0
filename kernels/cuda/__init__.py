"""Numba CUDA building blocks and the launch shapes every CUDA kernel of symjit uses.

Launch shapes come from the device: a grid-stride kernel gets blocks of :data:`THREADS` threads,
at most ``WAVES`` blocks per multiprocessor (the loop strides over the rest). numba's CUDA
simulator runs every simulated thread as a Python thread, so there the grid is kept to a few small
blocks: the kernels are the same, only the launch is smaller.

>>> blocks, threads = launch(10)
>>> blocks >= 1 and threads in (SIM_THREADS, THREADS)
True
"""
from __future__ import annotations

import functools

__all__ = ["THREADS", "SIM_THREADS", "launch", "block_launch", "device_shape"]

THREADS = 256          # threads per block of a grid-stride kernel on a GPU
WAVES = 8              # resident blocks per multiprocessor a grid-stride launch aims for
SIM_THREADS = 32       # the simulator's block (a Python thread per simulated thread)
SIM_BLOCKS = 2
SIM_BLOCK_THREADS = 4  # the simulator's block of a block-reduction kernel (each sync costs a poll)
MAX_SHARED = 1024      # the largest block a block-reduction kernel's shared buffer serves


@functools.cache
def device_shape() -> tuple[int, int]:
    """(threads per block, most blocks of a grid-stride launch) for the current device."""
    from numba import config, cuda
    if config.ENABLE_CUDASIM:
        return SIM_THREADS, SIM_BLOCKS
    dev = cuda.get_current_device()
    threads = min(THREADS, int(dev.MAX_THREADS_PER_BLOCK))
    return threads, max(1, int(dev.MULTIPROCESSOR_COUNT) * WAVES)


def launch(n: int) -> tuple[int, int]:
    """(blocks, threads) of a grid-stride kernel over ``n`` elements."""
    threads, most = device_shape()
    return max(1, min(most, (int(n) + threads - 1) // threads)), threads


def block_launch(n: int) -> tuple[int, int]:
    """(blocks, threads) of a kernel with one block per slice of ``n`` slices (a block reduction
    per channel or row; blocks stride over the slices when there are more than the grid holds)."""
    from numba import config
    threads = SIM_BLOCK_THREADS if config.ENABLE_CUDASIM else device_shape()[0]
    return max(1, min(int(n), 65535)), min(threads, MAX_SHARED)
