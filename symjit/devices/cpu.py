"""The host's runtime: numpy arrays in this process's memory, compiled code called in order on the
calling thread (no stream), the CPU's optimizer kernels (through ahead-of-time modules when those
are on), BLAS's threads sized per forward pass.

>>> import numpy as np
>>> d = CPUDevice()
>>> d.alloc((2,), np.dtype('int32'), 3).tolist(), d.stream()
([3, 3], 0)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import Device, provided

__all__ = ["CPUDevice"]


def _is_zero(fill: Any) -> bool:
    """``fill`` is +0 (a -0.0 fill keeps its sign bit)."""
    if isinstance(fill, np.ndarray):
        if fill.ndim:
            return False
        fill = fill[()]
    return (isinstance(fill, (int, float, bool, np.number, np.bool_)) and fill == 0
            and math.copysign(1.0, float(fill)) > 0)


class CPUDevice(Device):
    """The host (every ``cpu``, ``cpu_pinned`` and ``cpu_shared`` context)."""

    target_name = "cpu"
    host_memory = True
    aot = True

    def __init__(self, device_id: int = 0):
        super().__init__(device_id)
        self._update: Any = None   # the update kernels, chosen at the first call

    empty = staticmethod(np.empty)

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> Any:
        # zeros: calloc's pages, zeroed when first touched
        return np.zeros(shape, dtype) if _is_zero(fill) else np.full(shape, fill, dtype=dtype)

    def arena(self, nbytes: int) -> Any:
        return np.empty(max(int(nbytes), 1), np.uint8)

    def from_host(self, arr: np.ndarray) -> Any:
        return arr

    def upload(self, arr: np.ndarray, into: Any = None) -> Any:
        return arr

    def update_kernels(self) -> Any:
        """``symjit.kernels.cpu.optim`` (one ``njit`` loop each), imported on first use; with the
        kernel cache and ``Config.aot`` on (read once, at the first call), called through an
        ahead-of-time module when one was built for their argument types (no numba in the process;
        :class:`symjit.compiler.aot.Kernels`)."""
        if self._update is None:
            from ..config import default_config
            cfg = default_config()
            if self.aot and cfg.cache and cfg.aot != "off":
                self._update = provided("aot_kernels")("symjit.kernels.cpu.optim", cfg)
            else:
                from symjit.kernels.cpu import optim
                self._update = optim
        return self._update

    def thread_policy(self, blas_threads: Any) -> Any:
        from .. import threads
        return threads.policy(blas_threads)
