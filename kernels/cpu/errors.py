"""The error kernels' argument checks raise (no numba here: :mod:`~symjit.kernels.cpu.conv_shapes`
raises it too, in processes that never import numba)."""
from __future__ import annotations

from symjit.base import ShapeError

__all__ = ["KernelArgError"]


class KernelArgError(ShapeError):
    """A kernel argument with the wrong shape, dtype or memory layout (a ``ValueError``)."""
