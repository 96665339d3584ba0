"""Numba CUDA building blocks and the launch shapes every CUDA kernel of symjit uses.

Launch shapes come from the device: a grid-stride kernel gets blocks of :data:`THREADS` threads,
at most ``WAVES`` blocks per multiprocessor (the loop strides over the rest). numba's CUDA
simulator runs every simulated thread as a Python thread, so there the grid is kept to a few small
blocks: the kernels are the same, only the launch is smaller. A launch configuration carries the
stream the kernel is queued on (symjit queues a device's work on one stream per device,
:func:`symjit.ndarray.storage.stream`; ``0`` is the default stream). On the simulator, the first
launch shape asked for makes its shared arrays safe for a block's threads (:func:`guard_simulator`).

>>> blocks, threads, stream = launch(10)
>>> blocks >= 1 and threads in (SIM_THREADS, THREADS) and stream == 0
True
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any

__all__ = ["THREADS", "SIM_THREADS", "TILE", "launch", "block_launch", "tile_launch", "gemm_tile",
           "tiled", "device_shape", "guard_simulator"]

THREADS = 256          # threads per block of a grid-stride kernel on a GPU
WAVES = 8              # resident blocks per multiprocessor a grid-stride launch aims for
SIM_THREADS = 32      # the simulator's block (a Python thread per simulated thread)
SIM_BLOCKS = 2
SIM_BLOCK_THREADS = 4  # the simulator's block of a block-reduction kernel (each sync costs a poll)
MAX_SHARED = 1024      # the largest block a block-reduction kernel's shared buffer serves
TILE = 16              # a tiled GEMM's output tile is TILE x TILE, one thread per element
SIM_TILE = 2           # the simulator's tile (4 threads)
SIM_TILED_WORK = 4096  # the largest product (M * N * K) the simulator runs as a tiled GEMM

_SHAPES: dict[int, tuple[int, int]] = {}   # device id -> (threads, most blocks)
_SHARED_LOCK = threading.Lock()
_SIMULATOR: list[bool] = []   # [whether the simulator is on], once checked (and guarded)


def guard_simulator() -> bool:
    """Whether numba's CUDA simulator is on; the first call makes its ``cuda.shared.array`` hand
    every thread of a block the same array.

    The simulator runs a block's threads as Python threads and keeps a launch's shared arrays in
    a dict keyed by the calling source line. Its lookup (get, else make an array and store it)
    holds no lock, so two threads that both miss make two arrays, and the block's threads no
    longer share that memory: a tiled GEMM then reads tile entries no thread wrote (rare wrong
    values under load, more often with a short thread switch interval; on a GPU a block has one
    shared memory). This replaces the lookup with the same one under a lock, once per process.
    numba-cuda 0.30's simulator keeps the arrays in ``FakeCUDAShared._allocations``; a simulator
    without that dict is left as it is.

    >>> isinstance(guard_simulator(), bool)
    True
    """
    if not _SIMULATOR:
        from numba import config
        with _SHARED_LOCK:
            if not _SIMULATOR:
                on = bool(config.ENABLE_CUDASIM) and importlib.util.find_spec("numba.cuda") is not None
                if on:
                    _guard(importlib.import_module("numba.cuda.simulator.kernelapi"))
                _SIMULATOR.append(on)
    return _SIMULATOR[0]


def _guard(api: Any) -> None:
    shared = api.FakeCUDAShared
    if not isinstance(getattr(shared(0), "_allocations", None), dict):
        return
    unguarded = shared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:   # dynamic shared memory, or the simulator's error
            return unguarded(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)   # the simulator's key: file and line
        with _SHARED_LOCK:
            res = self._allocations.get(key)
            if res is None:
                if isinstance(dtype, api.types.Type):
                    dtype = api.numpy_support.as_dtype(dtype)
                res = self._allocations[key] = api.np.empty(shape, dtype)
        return res
    shared.array = array


def device_shape() -> tuple[int, int]:
    """(threads per block, most blocks of a grid-stride launch) for the current device (read
    once per device and process)."""
    if guard_simulator():
        return SIM_THREADS, SIM_BLOCKS
    from numba import cuda
    dev = cuda.get_current_device()
    shape = _SHAPES.get(dev.id)
    if shape is None:
        threads = min(THREADS, int(dev.MAX_THREADS_PER_BLOCK))
        shape = _SHAPES[dev.id] = (threads, max(1, int(dev.MULTIPROCESSOR_COUNT) * WAVES))
    return shape


def launch(n: int, stream: Any = 0) -> tuple[int, int, Any]:
    """(blocks, threads, stream) of a grid-stride kernel over ``n`` elements."""
    threads, most = device_shape()
    return max(1, min(most, (int(n) + threads - 1) // threads)), threads, stream


def block_launch(n: int, stream: Any = 0) -> tuple[int, int, Any]:
    """(blocks, threads, stream) of a kernel with one block per slice of ``n`` slices (a block
    reduction per channel or row; blocks stride over the slices when there are more than the grid
    holds)."""
    if guard_simulator():   # a few blocks, striding over the slices: fewer Python threads
        return max(1, min(int(n), SIM_BLOCKS)), SIM_BLOCK_THREADS, stream
    return max(1, min(int(n), 65535)), min(device_shape()[0], MAX_SHARED), stream


def gemm_tile() -> int:
    """The side of a tiled GEMM's square output tile (and of its shared-memory operand tiles):
    :data:`TILE` on a GPU, :data:`SIM_TILE` on the simulator. Code generation bakes it into the
    kernel (shared arrays need a constant shape), so the two get different kernels."""
    from numba import config
    return SIM_TILE if config.ENABLE_CUDASIM else TILE


def tile_launch(n: int, stream: Any = 0) -> tuple[int, int, Any]:
    """(blocks, threads, stream) of a tiled GEMM over ``n`` output tiles: a block of
    ``gemm_tile() ** 2`` threads per tile (blocks stride over the tiles past the grid's limit)."""
    t = gemm_tile()
    return max(1, min(int(n), SIM_BLOCKS if guard_simulator() else 65535)), t * t, stream


def tiled(work: int) -> bool:
    """Whether a matrix product of ``work`` multiply-adds (M * N * K, static) runs as a tiled
    GEMM: always on a GPU; on the simulator only up to :data:`SIM_TILED_WORK`, since each of the
    tile loop's barriers costs the simulator a round of Python threads (a 8 x 784 x 128 product
    took minutes). Bigger products run there with a thread per output element; the op cases keep
    the tiled kernels tested on the simulator, and the PTX check compiles them for every size."""
    from numba import config
    return not config.ENABLE_CUDASIM or work <= SIM_TILED_WORK
