"""Dropout masks and their application (MXNet 1.x ``Dropout``, ``mode='training'``).

``p`` is the probability of *dropping* an element. The mask holds ``1 / (1 - p)`` for a kept element
and 0 for a dropped one, so ``out = x * mask`` keeps the expected value (inverted dropout). The
backward is the same product: ``dx = dout * mask`` (call :func:`dropout_apply` with ``dout``).
``p == 1`` gives an all-zero mask (MXNet would divide by zero there); ``p == 0`` an all-one mask.

Random numbers come from Numba's own generator (a Mersenne Twister with one state per thread,
separate from numpy's global one): :func:`seed` seeds the calling thread's stream, and
``dropout_mask(..., seed_state)`` reseeds it first when ``seed_state >= 0`` (``-1`` continues the
stream). Seeding numpy (``np.random.seed``) does not affect these kernels.

All kernels are ``numba.njit(cache=True, nogil=True)`` on C-contiguous float32/float64 arrays of any
shape; call :func:`check_dropout` first.

>>> import numpy as np
>>> mask = np.empty((2, 4), dtype=np.float32)
>>> check_dropout("dropout_mask", mask, p=0.5)
>>> dropout_mask(mask, 0.5, 7)
>>> sorted(set(mask.ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
True
>>> out = np.empty_like(mask)
>>> dropout_apply(np.ones_like(mask), mask, out)
>>> bool((out == mask).all())
True
"""
from __future__ import annotations

import math

import numpy as np

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .gemm import KernelArgError, check_arrays, need_shape

__all__ = ["seed", "dropout_mask", "dropout_apply", "check_dropout"]

_jit = njit(cache=True, nogil=True)


@_jit
def seed(s):
    """Seed Numba's random stream of the calling thread (``0 <= s < 2**32``)."""
    np.random.seed(s)


@_jit
def dropout_mask(mask, p, seed_state):
    """Fill ``mask`` (any shape) with ``1/(1-p)`` (kept, probability ``1-p``) or 0 (dropped).
    ``p = 1`` keeps nothing and its scale ``1/0`` makes every mask value ``0 * inf``: NaN, as in MXNet.

    Reseeds the thread's stream with ``seed_state`` first when ``seed_state >= 0``.
    """
    if seed_state >= 0:
        np.random.seed(seed_state)
    flat = mask.reshape(mask.size)
    keep = 1.0 - p
    if keep <= 0.0:
        flat[:] = np.nan
        return
    scale = 1.0 / keep
    for i in range(flat.size):
        flat[i] = scale if np.random.random() < keep else 0.0


@_jit
def dropout_apply(x, mask, out):
    """``out = x * mask`` elementwise (dropout forward; with ``dout``/``dx`` also its backward)."""
    xf = x.reshape(x.size)
    mf = mask.reshape(mask.size)
    of = out.reshape(out.size)
    for i in range(of.size):
        of[i] = xf[i] * mf[i]


def check_dropout(kernel: str, mask: np.ndarray, x: np.ndarray | None = None, out: np.ndarray | None = None,
                  p: float = 0.5, seed_state: int = -1) -> None:
    """Validate a dropout call: ``0 <= p <= 1``, ``seed_state < 2**32``, ``x``/``out`` shaped like ``mask``.

    >>> try:
    ...     check_dropout("dropout_mask", np.zeros(3), p=1.5)
    ... except ValueError as e:
    ...     print(e)
    dropout_mask: p must be in [0, 1], got 1.5
    """
    arrays = {"mask": mask}
    if x is not None:
        arrays["x"] = x
    if out is not None:
        arrays["out"] = out
    check_arrays(kernel, **arrays)
    for name in ("x", "out"):
        if name in arrays:
            need_shape(kernel, name, arrays[name], mask.shape)
    try:
        pf = float(p)
    except (TypeError, ValueError):
        pf = math.nan
    if not (math.isfinite(pf) and 0.0 <= pf <= 1.0):
        raise KernelArgError(f"{kernel}: p must be in [0, 1], got {p}")
    if not -1 <= int(seed_state) < 2 ** 32:
        raise KernelArgError(f"{kernel}: seed_state must be -1 (no reseed) or in [0, 2**32), "
                             f"got {seed_state}")
