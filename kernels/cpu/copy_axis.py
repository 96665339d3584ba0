"""Block copies along one axis: the CPU kernels of ``Concat``, ``stack`` and ``SliceChannel``.

A concatenation writes each input into a run of the output's ``axis``; a split reads each output
from one. Seen around ``axis``, an array is ``(A, D * B)``: ``A`` the product of the axes before
it, ``B`` of those after it, so a run ``[offset, offset + M)`` of the axis is, for each of the
``A`` rows, the contiguous block ``[offset * B, (offset + M) * B)``, and one copy loop of
``M * B`` elements per row (which LLVM vectorizes) moves it. The other array of the copy has the
same ``A`` rows of ``M * B`` elements: an input of ``Concat`` (``M`` its length on the axis), an
input of ``stack`` (the output's new axis: ``M = 1``), an output of ``SliceChannel`` (with or
without ``squeeze_axis``).

A program calls these functions itself, one call per input or output, with the axis and the
offset as arguments (``KernelWriter.direct``): numba compiles one per pair of ranks and dtype,
kept in its cache next to this file, instead of a kernel per number of inputs, axis and shapes.
An interpreted program (:mod:`symjit.compiler.tier`) runs their numpy forms instead
(``symjit.lower.cpu.interpret.CALL_TWINS``).

>>> import numpy as np
>>> out = np.zeros((2, 5), np.float32)
>>> into_axis(out, np.ones((2, 2), np.float32), 1, 0)
>>> into_axis(out, np.full((2, 3), 2, np.float32), 1, 2)
>>> out
array([[1., 1., 2., 2., 2.],
       [1., 1., 2., 2., 2.]], dtype=float32)
>>> part = np.empty((2, 3), np.float32)
>>> from_axis(out, part, 1, 2)
>>> part[0]
array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .norm_axis import view3

__all__ = ["into_axis", "from_axis"]


@njit(cache=True, nogil=True, inline="always")
def _run_copy(big, small, axis, offset, into):
    """Copy between the run of ``big``'s ``axis`` that starts at ``offset`` and ``small`` (``A``
    rows of ``M * B`` elements): into ``big`` when ``into``, else out of it."""
    v = view3(big, axis)
    a, b = v.shape[0], v.shape[2]
    if a == 0 or small.size == 0:
        return
    n = small.size // a
    big2 = v.reshape(a, v.shape[1] * b)
    small2 = small.reshape(a, n)
    start = offset * b
    for i in range(a):
        if into:
            big2[i, start:start + n] = small2[i, :]
        else:
            small2[i, :] = big2[i, start:start + n]


@njit(cache=True, nogil=True)
def into_axis(dst, src, axis, offset):
    """Write ``src`` into the run of ``dst``'s ``axis`` that starts at ``offset`` (``src`` holds
    ``A`` rows of ``M * B`` elements, both C-contiguous, the run within the axis)."""
    _run_copy(dst, src, axis, offset, True)


@njit(cache=True, nogil=True)
def from_axis(src, dst, axis, offset):
    """Read ``dst`` from the run of ``src``'s ``axis`` that starts at ``offset`` (``dst`` holds
    ``A`` rows of ``M * B`` elements, both C-contiguous, the run within the axis)."""
    _run_copy(src, dst, axis, offset, False)
