"""Where an NDArray's elements live: a numpy array on CPU, a numba.cuda device array on GPU.

Every access to the storage goes through the few functions here, so the NDArray class never
needs to know which kind of buffer stands behind it. CPU storage is a C-contiguous numpy array
when freshly created; GPU storage is a ``numba.cuda`` device array and exists only when
``numba.cuda.is_available()`` (or numba's CUDA simulator is on). GPU arrays compute through a
host copy: the imperative API is for convenience, the compiled executor does the real work.

>>> import numpy as np
>>> from symjit.context import cpu
>>> buf = from_host(np.arange(3, dtype=np.float32), cpu())
>>> to_host(buf).tolist()
[0.0, 1.0, 2.0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError, shape_str
from ..context import Context, current_context

__all__ = ["check_ctx", "alloc", "from_host", "to_host", "write", "view", "is_device_array",
           "gpu_available", "is_contiguous", "arena", "device_scope", "copy_from_host"]


def gpu_available() -> int:
    """How many CUDA devices numba can use (its simulator counts as one); 0 when none."""
    try:
        from numba import cuda
        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - numba's CUDA driver missing or broken
        return 0


def check_ctx(ctx: Any, where: str = "NDArray") -> Context:
    """Normalise ``ctx`` (None, a Context or a device name) and check the device exists.

    >>> check_ctx(None)
    cpu(0)
    """
    if ctx is None:
        ctx = current_context()
    elif isinstance(ctx, str):
        ctx = Context(ctx, 0)
    elif not isinstance(ctx, Context):
        raise MXNetError(f"{where}: ctx must be a Context such as mx.cpu() or mx.gpu(0), got {ctx!r}")
    if ctx.device_type == "gpu":
        n = gpu_available()
        if n == 0:
            raise MXNetError(f"{where}: cannot place an array on {ctx}: no GPU is available "
                             "(numba.cuda.is_available() is False; a GPU needs an NVIDIA driver and "
                             "pip install 'symjit[cuda]', or set NUMBA_ENABLE_CUDASIM=1 to run GPU "
                             "code on numba's simulator)")
        if ctx.device_id >= n:
            raise MXNetError(f"{where}: cannot place an array on {ctx}: only {n} GPU(s) are present")
    return ctx


def is_device_array(buf: Any) -> bool:
    """True for GPU storage (anything that is not a numpy array)."""
    return not isinstance(buf, np.ndarray)


def _select(ctx: Context):
    from numba import cuda
    return cuda.gpus[ctx.device_id]


def device_scope(ctx: Context) -> Any:
    """A ``with`` block making ``ctx``'s GPU numba's current device (does nothing for the CPU).

    >>> from symjit.context import cpu
    >>> with device_scope(cpu()):
    ...     pass
    """
    if ctx.device_type != "gpu":
        import contextlib
        return contextlib.nullcontext()
    return _select(ctx)


def is_contiguous(buf: Any) -> bool:
    """True when ``buf`` (numpy or device array) is laid out in C order without gaps."""
    if isinstance(buf, np.ndarray):
        return bool(buf.flags.c_contiguous)
    return bool(buf.is_c_contiguous())


def arena(nbytes: int, ctx: Context) -> Any:
    """An uninitialised byte buffer of ``nbytes`` (at least 1) on ``ctx``: the storage the memory
    plan carves an executor's temporaries from."""
    nbytes = max(int(nbytes), 1)
    if ctx.device_type != "gpu":
        return np.empty(nbytes, np.uint8)
    from numba import cuda
    with _select(ctx):
        return cuda.device_array(nbytes, np.uint8)


def copy_from_host(buf: Any, src: np.ndarray) -> None:
    """Overwrite all of ``buf`` with the same-shaped host array ``src`` (cast to buf's dtype)."""
    src = np.ascontiguousarray(src, dtype=buf.dtype)
    if isinstance(buf, np.ndarray):
        buf[...] = src
    else:
        buf.copy_to_device(src)


def from_host(arr: np.ndarray, ctx: Context) -> Any:
    """New storage on ``ctx`` holding a copy of ``arr`` (C order); no copy is made of a fresh
    C-contiguous CPU array that the caller hands over."""
    arr = np.ascontiguousarray(arr)
    if ctx.device_type != "gpu":
        return arr
    from numba import cuda
    with _select(ctx):
        return cuda.to_device(arr)


def alloc(shape: tuple[int, ...], dtype: np.dtype, ctx: Context, fill: Any = 0) -> Any:
    """New storage of ``shape``/``dtype`` on ``ctx``, every element set to ``fill``."""
    return from_host(np.full(shape, fill, dtype=dtype), ctx)


def to_host(buf: Any, copy: bool = False) -> np.ndarray:
    """The elements as a numpy array: CPU storage itself (a copy when ``copy``), GPU storage copied."""
    if isinstance(buf, np.ndarray):
        return buf.copy() if copy else buf
    return buf.copy_to_host()


def view(buf: Any, key: Any) -> Any | None:
    """A view of ``buf[key]`` sharing memory when it is contiguous, else None (caller copies)."""
    if isinstance(buf, np.ndarray):
        out = buf[key]
        if isinstance(out, np.ndarray) and out.flags.c_contiguous and np.shares_memory(out, buf):
            return out
        return None
    if isinstance(key, slice) and key.step in (None, 1):
        return buf[key]
    return None


def reshape_view(buf: Any, shape: tuple[int, ...]) -> Any:
    """``buf`` seen with a new shape (same elements, shared memory); buf must be contiguous."""
    return buf.reshape(shape)


def write(buf: Any, key: Any, value: Any, where: str = "NDArray.__setitem__") -> None:
    """Write ``value`` (scalar or numpy array, broadcast) into ``buf[key]`` in place."""
    host = buf if isinstance(buf, np.ndarray) else buf.copy_to_host()
    try:
        host[key] = value
    except ValueError as exc:
        vshape = shape_str(np.shape(value))
        raise MXNetError(f"{where}: cannot assign a value of shape {vshape} to the selection "
                         f"{key!r} of an array of shape {shape_str(host.shape)}: {exc}") from None
    except IndexError as exc:
        raise MXNetError(f"{where}: index {key!r} is out of range for an array of shape "
                         f"{shape_str(host.shape)}: {exc}") from None
    if not isinstance(buf, np.ndarray):
        buf.copy_to_device(host)
