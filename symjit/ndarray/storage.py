"""Where an NDArray's elements live: a numpy array on CPU, a numba.cuda device array on GPU.

Every access to the storage goes through the few functions here, so the NDArray class never
needs to know which kind of buffer stands behind it; what differs per device (allocation, streams,
the device scope) they ask the context's device object (``ctx.device``, :mod:`symjit.devices`).
CPU storage is a C-contiguous numpy array
when freshly created; GPU storage is a ``numba.cuda`` device array and exists only when
``numba.cuda.is_available()`` (or numba's CUDA simulator is on).

Each GPU has one stream symjit queues its work on (:func:`stream`), as MXNet's engine keeps a
stream per device: every device array made here is bound to its device's stream, so its copies,
and the kernels launched on it, run in order there; reading elements on the host (:func:`to_host`)
waits for that stream, :func:`synchronize` waits for one device or all.

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
from ..devices import made

__all__ = ["check_ctx", "alloc", "empty", "from_host", "to_host", "write", "view", "is_device_array",
           "is_contiguous", "arena", "device_scope", "copy_from_host", "copy_into",
           "stream", "synchronize", "address", "overlaps", "same_buffer"]

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
    ctx.device.check(ctx, where)
    return ctx


def is_device_array(buf: Any) -> bool:
    """True for GPU storage (anything that is not a numpy array)."""
    return not isinstance(buf, np.ndarray)


def device_scope(ctx: Context) -> Any:
    """A ``with`` block making ``ctx``'s GPU numba's current device (does nothing for the CPU).

    >>> from symjit.context import cpu
    >>> with device_scope(cpu()):
    ...     pass
    """
    return ctx.device.scope()


def stream(ctx: Context) -> Any:
    """The stream ``ctx``'s work is queued on (``0``, no stream, for the CPU); made on first use.

    >>> from symjit.context import cpu
    >>> stream(cpu())
    0
    """
    return ctx.device.stream()


def synchronize(ctx: Context | None = None) -> None:
    """Wait until the work queued on ``ctx`` (every GPU when None) has finished.

    >>> synchronize()
    """
    for dev in made() if ctx is None else (ctx.device,):
        dev.synchronize()


def _sync(buf: Any) -> None:
    s = getattr(buf, "stream", 0)
    if s:
        s.synchronize()


def is_contiguous(buf: Any) -> bool:
    """True when ``buf`` (numpy or device array) is laid out in C order without gaps."""
    if isinstance(buf, np.ndarray):
        return bool(buf.flags.c_contiguous)
    return bool(buf.is_c_contiguous())


def arena(nbytes: int, ctx: Context) -> Any:
    """An uninitialised byte buffer of ``nbytes`` (at least 1) on ``ctx``: the storage the memory
    plan carves an executor's temporaries from."""
    return ctx.device.arena(nbytes)


def empty(shape: tuple[int, ...], dtype: np.dtype, ctx: Context) -> Any:
    """New uninitialised storage of ``shape``/``dtype`` on ``ctx`` (on a GPU, bound to its stream).

    >>> from symjit.context import cpu
    >>> empty((2,), np.dtype('float32'), cpu()).shape
    (2,)
    """
    return ctx.device.empty(shape, dtype)


def copy_from_host(buf: Any, src: np.ndarray) -> None:
    """Overwrite all of ``buf`` with the same-shaped host array ``src`` (cast to buf's dtype)."""
    src = np.ascontiguousarray(src, dtype=buf.dtype)
    if isinstance(buf, np.ndarray):
        buf[...] = src
    else:
        buf.copy_to_device(src)
        _sync(buf)   # the host array may be a temporary: the copy must finish before it goes


def copy_into(dst: Any, src: Any) -> None:
    """Copy all of ``src`` into ``dst``, storage of the same shape, dtype and kind (both numpy or
    both device arrays of one device: a device-to-device copy queued on ``dst``'s stream).

    >>> a, b = np.zeros(2), np.ones(2)
    >>> copy_into(a, b); a.tolist()
    [1.0, 1.0]
    """
    if isinstance(dst, np.ndarray):
        dst[...] = src
    else:
        dst.copy_to_device(src)


def _extent(buf: Any) -> tuple[int, int]:
    """(first byte address, byte count) of contiguous storage."""
    if isinstance(buf, np.ndarray) or not hasattr(buf, "device_ctypes_pointer"):
        start = int(buf.__array_interface__["data"][0])     # numpy, or the simulator's arrays
    else:
        start = int(buf.device_ctypes_pointer.value or 0)
    return start, int(buf.nbytes)


def address(buf: Any) -> int:
    """The address of a contiguous storage's first element (host memory on the CPU and on the
    simulator, device memory on a GPU).

    >>> x = np.zeros(4)
    >>> address(x[1:]) - address(x)
    8
    """
    return _extent(buf)[0]


def overlaps(a: Any, b: Any) -> bool:
    """True when two contiguous storages of one kind share some bytes.

    >>> x = np.zeros(4)
    >>> overlaps(x[:2], x[1:]), overlaps(x[:2], x[2:])
    (True, False)
    """
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))   # the same bounds test, without building dicts
    (sa, na), (sb, nb) = _extent(a), _extent(b)
    return na > 0 and nb > 0 and sa < sb + nb and sb < sa + na


def same_buffer(a: Any, b: Any) -> bool:
    """True when two contiguous storages cover exactly the same bytes.

    >>> x = np.zeros(4)
    >>> same_buffer(x, x.reshape(2, 2)), same_buffer(x[:2], x)
    (True, False)
    """
    return _extent(a) == _extent(b)


def from_host(arr: np.ndarray, ctx: Context) -> Any:
    """New storage on ``ctx`` holding a copy of ``arr`` (C order); no copy is made of a fresh
    C-contiguous CPU array that the caller hands over."""
    return ctx.device.from_host(np.ascontiguousarray(arr))


def alloc(shape: tuple[int, ...], dtype: np.dtype, ctx: Context, fill: Any = 0) -> Any:
    """New storage of ``shape``/``dtype`` on ``ctx``, every element set to ``fill`` (on a GPU by a
    fill kernel on the device, no host buffer).

    >>> from symjit.context import cpu
    >>> alloc((2,), np.dtype('int32'), cpu(), 3).tolist()
    [3, 3]
    """
    return ctx.device.alloc(shape, dtype, fill)


def to_host(buf: Any, copy: bool = False) -> np.ndarray:
    """The elements as a numpy array: CPU storage itself (a copy when ``copy``), GPU storage copied."""
    if isinstance(buf, np.ndarray):
        return buf.copy() if copy else buf
    out = buf.copy_to_host()
    _sync(buf)
    return out


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
    """Write ``value`` (scalar or numpy array, broadcast) into ``buf[key]`` in place. On a GPU a
    basic key (ints, slices, Ellipsis) is written on the device (numba's device assignment kernel,
    the value copied over once); an advanced key (integer arrays) goes through a host copy."""
    if not isinstance(buf, np.ndarray) and _basic(key):
        try:
            buf[key] = value
        except (ValueError, TypeError, IndexError) as exc:
            raise MXNetError(f"{where}: cannot assign a value of shape {shape_str(np.shape(value))} "
                             f"to the selection {key!r} of an array of shape "
                             f"{shape_str(tuple(buf.shape))}: {exc}") from None
        if isinstance(value, np.ndarray) or np.isscalar(value):
            _sync(buf)   # a host value may be a temporary of the caller; device values stay queued
        return
    host = buf if isinstance(buf, np.ndarray) else to_host(buf)
    try:
        try:
            host[key] = value
        except ValueError:
            # one element into one element (a (1,) array into a scalar selection), as MXNet allows
            if not (isinstance(value, np.ndarray) and value.size == 1 and np.ndim(host[key]) == 0):
                raise
            host[key] = value.reshape(())
    except ValueError as exc:
        vshape = shape_str(np.shape(value))
        raise MXNetError(f"{where}: cannot assign a value of shape {vshape} to the selection "
                         f"{key!r} of an array of shape {shape_str(host.shape)}: {exc}") from None
    except IndexError as exc:
        raise MXNetError(f"{where}: index {key!r} is out of range for an array of shape "
                         f"{shape_str(host.shape)}: {exc}") from None
    if not isinstance(buf, np.ndarray):
        copy_from_host(buf, host)


def _basic(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is Ellipsis or isinstance(k, slice) or
               (isinstance(k, (int, np.integer)) and not isinstance(k, bool)) for k in parts)
