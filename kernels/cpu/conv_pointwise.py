"""1x1 convolutions at stride 1 without padding (float32, one group) as register-tile GEMMs on
numba's threads: ``out[n] (F, P) = w (F, C) @ x[n] (C, P)``, ``P = H*W``, read and written where
they lie (no im2col, no scratch).

:func:`~symjit.kernels.cpu.conv_vec.tile_gemm` runs :mod:`~symjit.kernels.cpu.conv_vec`'s ``MR x
NR`` tile over blocks of :data:`POINTWISE_RUN` positions of one image (a last block takes the
rest), every block of filters passing over a block's positions while they are in L2; the tasks
(image, position block, and a share of the filters when there are fewer than 16 tasks) are split
over the threads. Alone, it ran 1.0-1.7x as fast as BLAS's GEMMs (``conv_direct.conv2d_forward_1x1``,
or im2col's copy and one GEMM) on ResNet-50's and Inception's 1x1 layers of 64 pixels or more,
and like the tile convolutions around it, it runs on numba's threads rather than waking
OpenBLAS's (``docs/performance.md``, "Register tiles as GEMMs: small planes, strided and 1x1
layers"). The compiler picks this kernel per shape
(:func:`~symjit.kernels.cpu.conv_small_rules.prefers_pointwise_tiles`).

>>> import numpy as np
>>> x = np.arange(2 * 3 * 16, dtype=np.float32).reshape(2, 3, 4, 4)
>>> w = np.ones((8, 3, 1, 1), np.float32)
>>> out = np.empty((2, 8, 4, 4), np.float32)
>>> check_pointwise(x, w, out, 1)
>>> from symjit.parts import whole_call
>>> conv2d_forward_pointwise_parts(x, w, out, 1, *whole_call())
>>> out[1, 7, 0].tolist()     # x[1, :, 0, :4] summed over the 3 channels: 192 + 3j
[192.0, 195.0, 198.0, 201.0]
"""
from __future__ import annotations

import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .conv_small_rules import is_pointwise_tiles
from .conv_vec import MR, tile_gemm
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape

__all__ = ["conv2d_forward_pointwise_parts", "check_pointwise", "POINTWISE_RUN"]

POINTWISE_RUN = 256
"""Positions per task: four runs of the AVX-512 tile's 64. The weight's rows for a block of
filters stay in L1 while the block passes over them."""

TASKS = 16
"""Fewer tasks than this (small batches of small planes) also split the filters."""


def check_pointwise(x: np.ndarray, w: np.ndarray, out: np.ndarray, groups: int) -> None:
    """Validate :func:`conv2d_forward_pointwise_parts`'s arguments; raises
    :class:`~symjit.kernels.cpu.gemm.KernelArgError` naming the argument."""
    name = "conv2d_forward_pointwise_parts"
    check_arrays(name, x=x, w=w, out=out)
    for arg, arr in (("x", x), ("w", w), ("out", out)):
        need_ndim(name, arg, arr, 4)
    if not is_pointwise_tiles(x.shape, w.shape, (1, 1), (0, 0), (1, 1), groups, x.dtype):
        raise KernelArgError(f"{name}: takes float32, a 1x1 window, one group, at least 6 filters and 16 "
                             f"pixels on a host with AVX2 or AVX-512; got 'x' {shape_str(x.shape)} "
                             f"{x.dtype}, 'w' {shape_str(w.shape)}, groups={groups}")
    need_shape(name, "w", w, (w.shape[0], x.shape[1], 1, 1), " (one weight per filter and channel)")
    need_shape(name, "out", out, (x.shape[0], w.shape[0], x.shape[2], x.shape[3]), " (stride 1, no padding)")


@njit(cache=True, nogil=True)
def conv2d_forward_pointwise_parts(x, w, out, groups, part, parts, sync):
    """``out[n] = w (F, C) @ x[n] (C, H*W)`` for every image (``groups`` is 1; kept for the direct
    kernels' signature): the tasks of part ``part`` of ``parts`` even runs of them (the host runs
    the parts on its threads, :mod:`symjit.parts`)."""
    n_, c_ = x.shape[0], x.shape[1]
    f_ = w.shape[0]
    p = x.shape[2] * x.shape[3]
    xf, wf, of = x.reshape(-1), w.reshape(-1), out.reshape(-1)
    ng = max(1, p // POINTWISE_RUN)
    blocks = f_ // MR
    shares = max(1, min(blocks, (TASKS + n_ * ng - 1) // (n_ * ng)))
    t0, t1 = part_range(part, parts, n_ * ng * shares)
    for t in range(t0, t1):
        n, g, s = t // (ng * shares), (t // shares) % ng, t % shares
        j0 = g * POINTWISE_RUN
        cols = p - j0 if g == ng - 1 else POINTWISE_RUN
        f0 = s * blocks // shares * MR
        f1 = f_ if s == shares - 1 else (s + 1) * blocks // shares * MR
        tile_gemm(wf, f0 * c_, c_, 1, xf, n * c_ * p + j0, p, f1 - f0, cols, c_, of,
                  (n * f_ + f0) * p + j0, p, True)
