"""Fill kernel for GPU storage (:func:`symjit.ndarray.storage.alloc` on a GPU): every element of
a flat device array set to one value, with no host buffer of the array's size."""
from __future__ import annotations

from typing import Any

from numba import cuda

from . import launch

__all__ = ["fill"]


@cuda.jit
def _fill_kernel(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


def fill(flat: Any, value: Any, stream: Any = 0) -> None:
    """Set every element of the 1-D device array ``flat`` to ``value`` (of its dtype)."""
    _fill_kernel[launch(flat.size, stream)](flat, value)
