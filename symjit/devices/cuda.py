"""A GPU's runtime: numba.cuda device arrays, each bound to the one stream symjit queues the
device's work on (as MXNet's engine keeps a stream per device), so copies and kernels run in order
there; the device made numba's current one around every call that needs it; the CUDA optimizer
kernels queued on the stream. numba.cuda is imported at the first call that needs it, not with
this module, and exists only where ``numba.cuda.is_available()`` (or numba's simulator is on).

>>> CUDADevice(1).target_name, CUDADevice(1).host_memory
('cuda', False)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from . import Device

__all__ = ["CUDADevice"]


class _OnDevice:
    """The GPU update-kernel modules, whose functions run with the device current, queued on its
    stream."""

    def __init__(self, modules: tuple, device: CUDADevice):
        self._modules, self._device = modules, device

    def __getattr__(self, name: str):
        fn = next((getattr(m, name) for m in self._modules if name in m.__all__), None)
        if fn is None:
            raise AttributeError(f"no GPU update kernel {name!r}")
        device = self._device

        def call(*args):
            with device.scope():
                fn(*args, stream=device.stream())
        return call


class CUDADevice(Device):
    """GPU ``device_id`` (``gpu(i)``)."""

    target_name = "cuda"

    def __init__(self, device_id: int = 0):
        super().__init__(device_id)
        self._stream: Any = None   # made on first use

    def check(self, ctx: Any, where: str) -> None:
        from ..context import num_gpus
        n = num_gpus()   # numba's simulator counts as one
        if n == 0:
            raise MXNetError(f"{where}: cannot place an array on {ctx}: no GPU is available "
                             "(numba.cuda.is_available() is False; a GPU needs an NVIDIA driver and "
                             "pip install 'symjit[cuda]', or set NUMBA_ENABLE_CUDASIM=1 to run GPU "
                             "code on numba's simulator)")
        if self.device_id >= n:
            raise MXNetError(f"{where}: cannot place an array on {ctx}: only {n} GPU(s) are present")

    def scope(self) -> Any:
        from numba import cuda
        return cuda.gpus[self.device_id]

    def stream(self) -> Any:
        s = self._stream
        if s is None:
            from numba import cuda
            with self.scope():
                s = self._stream = cuda.stream()
        return s

    def synchronize(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        from numba import cuda
        with self.scope():
            return cuda.device_array(shape, dtype, stream=self.stream())

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> Any:
        """On the device by a fill kernel, no host buffer."""
        out = self.empty(shape, dtype)
        if out.size:
            from symjit.kernels.cuda.copy import fill as fill_kernel
            with self.scope():
                fill_kernel(out.reshape(out.size), np.asarray(fill).astype(dtype)[()], self.stream())
        return out

    def from_host(self, arr: np.ndarray) -> Any:
        from numba import cuda
        with self.scope():
            out = cuda.to_device(arr, stream=self.stream())
        self.stream().synchronize()   # ``arr`` may be a temporary of the caller
        return out

    def upload(self, arr: np.ndarray, into: Any = None) -> Any:
        from numba import cuda
        with self.scope():
            if into is None or into.shape != arr.shape:
                return cuda.to_device(arr)   # finished on return
            into.copy_to_device(arr, stream=self.stream())   # queued before the kernels reading it
        return into

    def update_kernels(self) -> Any:
        """``symjit.kernels.cuda.optim`` (one kernel each), queued on this device's stream."""
        from symjit.kernels.cuda import optim
        return _OnDevice((optim,), self)
