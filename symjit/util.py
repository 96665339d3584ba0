"""``mx.util``: MXNet 1.9.1's helper functions and its NumPy shape semantics switch.

Classic shapes are the default (``mx.nd``, ``mx.sym``: 0 in a shape is an unknown size, no 0-d
arrays). :func:`set_np_shape`, :func:`np_shape` and :func:`use_np_shape` turn on MXNet's NumPy
*shape* semantics for the calling thread, as MXNet's switch is per thread: -1 is an unknown size
and ``None`` an unknown rank in ``infer_shape``/``infer_shape_partial``, 0 is a real size (zero-size
arrays), ``()`` the shape of a 0-d array. MXNet's NumPy *array* semantics (``mx.np``, ``set_np``) are
not there, so :func:`is_np_array` is always False; turning them on is a
:class:`NumpySemanticsUnsupported` error, and so is calling a function the ``use_np``/``use_np_array``
decorators wrapped (decorating works, so a module that decorates some of its functions still imports).
The top-level names MXNet exports from here (``mx.is_np_shape``, ``mx.np_shape``, ``mx.use_np``,
...) are these functions. The environment functions read and write ``os.environ``; the GPU
functions ask numba.cuda (0 GPUs without numba-cuda or a GPU; numba's CUDA simulator counts as one).

>>> import symjit as mx
>>> mx.util.is_np_shape(), mx.is_np_array()
(False, False)
>>> with mx.np_shape(True):
...     mx.sym.var('x', shape=(-1, 3)).infer_shape_partial()[0]
[(-1, 3)]
>>> mx.util.set_np()  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
symjit.util.NumpySemanticsUnsupported: util.set_np: MXNet's NumPy array semantics are not supported ...
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .base import MXNetError
from .context import Context, num_gpus

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
           "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv", "makedirs",
           "get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability", "NumpySemanticsUnsupported"]

_WHY = ("MXNet's NumPy array semantics are not supported by symjit, which implements the mx.nd/mx.sym "
        "arrays (with MXNet's NumPy shape semantics through set_np_shape/np_shape/use_np_shape); "
        "mx.np and mx.npx are not there yet")
_STATE = threading.local()    # the NumPy shape switch, per thread as MXNet's


class NumpySemanticsUnsupported(MXNetError, NotImplementedError):
    """Asked to turn on MXNet's NumPy shape or array semantics."""


def _refuse(where: str) -> NumpySemanticsUnsupported:
    return NumpySemanticsUnsupported(f"util.{where}: {_WHY}")


def is_np_shape() -> bool:
    """Whether NumPy shape semantics are on in the calling thread (off unless turned on).

    >>> is_np_shape()
    False
    """
    return getattr(_STATE, "np_shape", False)


def is_np_array() -> bool:
    """Whether NumPy array semantics are on: never in symjit.

    >>> is_np_array()
    False
    """
    return False


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on or off for the calling thread; returns the previous state.

    >>> set_np_shape(True)
    False
    >>> set_np_shape(False)
    True
    """
    prev = is_np_shape()
    _STATE.np_shape = bool(active)
    return prev


def set_np(shape: bool = True, array: bool = True) -> None:
    """Set NumPy shape semantics to ``shape``; NumPy array semantics (``array=True``) are an error.

    >>> set_np(shape=False, array=False)
    """
    if not shape and array:   # MXNet's own rule, checked first as it does
        raise ValueError("util.set_np: NumPy shape semantics are required for NumPy array semantics")
    if array:
        raise _refuse("set_np")
    set_np_shape(shape)


def reset_np() -> None:
    """Turn NumPy shape semantics off (array semantics are never on in symjit).

    >>> reset_np()
    """
    set_np(shape=False, array=False)


class _ShapeScope:
    """``with np_shape(active):``: the switch set on entry, the previous state back on exit."""

    def __init__(self, active: bool):
        self._active, self._prev = bool(active), None

    def __enter__(self) -> _ShapeScope:
        self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None) -> None:
        set_np_shape(bool(self._prev))


class _Scope:
    """``with np_array(active):``: a no-op when ``active`` is False, else an error on entry."""

    def __init__(self, where: str, active: bool):
        self._where, self._active = where, bool(active)

    def __enter__(self) -> _Scope:
        if self._active:
            raise _refuse(f"{self._where}(True)")
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None) -> None:
        return None


def np_shape(active: bool = True) -> _ShapeScope:
    """A ``with`` scope running its block with NumPy shape semantics on (or off with
    ``active=False``) in the calling thread; the state before it is back after it.

    >>> import symjit as mx
    >>> with np_shape():
    ...     is_np_shape(), mx.nd.zeros((0, 2)).shape
    (True, (0, 2))
    >>> is_np_shape()
    False
    """
    return _ShapeScope(active)


def np_array(active: bool = True) -> _Scope:
    """A scope with NumPy array semantics on (an error on entry) or off (no change).

    >>> with np_array(active=False):
    ...     is_np_array()
    False
    """
    return _Scope("np_array", active)


def _refusing(func: Callable, where: str) -> Callable:
    """``func`` (a function or class) made to raise the not-supported error when it is called or
    instantiated: a module that decorates some of its functions still imports."""
    if isinstance(func, type):
        def refuse_new(cls: type, *args: Any, **kwargs: Any) -> Any:
            raise _refuse(where)
        func.__new__ = refuse_new   # type: ignore[method-assign, assignment]
        return func

    @functools.wraps(func)
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _refuse(where)
    return refuse


def use_np_shape(func: Callable) -> Callable:
    """``func`` run with NumPy shape semantics on: a function is wrapped (its name and docstring
    kept); in a class every method, static or class method and property getter, its own or
    inherited, is wrapped.

    >>> @use_np_shape
    ... def scalar_shape():
    ...     return is_np_shape()
    >>> scalar_shape(), is_np_shape()
    (True, False)
    """
    if inspect.isclass(func):
        for name in dir(func):
            member = inspect.getattr_static(func, name)
            if isinstance(member, property):
                setattr(func, name, property(use_np_shape(member.fget) if member.fget else None,
                                             member.fset, member.fdel, member.__doc__))
            elif isinstance(member, (staticmethod, classmethod)):
                setattr(func, name, type(member)(use_np_shape(member.__func__)))
            elif inspect.isfunction(member):
                setattr(func, name, use_np_shape(member))
        return func
    if not callable(func):
        raise TypeError(f"util.use_np_shape: expected a function or a class, got {type(func).__name__}")

    @functools.wraps(func)
    def with_np_shape(*args: Any, **kwargs: Any) -> Any:
        with np_shape(True):
            return func(*args, **kwargs)
    return with_np_shape


def use_np_array(func: Callable) -> Callable:
    """MXNet's decorator running ``func`` with NumPy array semantics: decorating works, calling the
    result raises :class:`NumpySemanticsUnsupported`.

    >>> use_np_array(len)([1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    symjit.util.NumpySemanticsUnsupported: util.use_np_array: ...
    """
    return _refusing(func, "use_np_array")


def use_np(func: Callable) -> Callable:
    """MXNet's decorator running ``func`` (a function or class) with NumPy shape and array
    semantics: decorating works, calling the function or creating an instance raises
    :class:`NumpySemanticsUnsupported`.

    >>> @use_np
    ... class Net:
    ...     pass
    >>> Net()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    symjit.util.NumpySemanticsUnsupported: util.use_np: ...
    """
    return _refusing(func, "use_np")


def getenv(name: str) -> str | None:
    """The value of environment variable ``name``, or None if it is not set.

    >>> setenv('SYMJIT_UTIL_DOC', '1'); getenv('SYMJIT_UTIL_DOC')
    '1'
    >>> setenv('SYMJIT_UTIL_DOC', None); getenv('SYMJIT_UTIL_DOC') is None
    True
    """
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set environment variable ``name`` to ``value`` (None unsets it). Settings symjit reads once
    (``SYMJIT_*``, numba's and BLAS's) take effect where they are read, as in MXNet."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def makedirs(d: str | os.PathLike) -> None:
    """Create directory ``d`` and its parents; an existing directory is fine.

    >>> import tempfile, pathlib
    >>> root = tempfile.mkdtemp()
    >>> makedirs(pathlib.Path(root) / 'a' / 'b'); makedirs(pathlib.Path(root) / 'a' / 'b')
    >>> (pathlib.Path(root) / 'a' / 'b').is_dir()
    True
    """
    os.makedirs(d, exist_ok=True)


def get_gpu_count() -> int:
    """The number of GPUs ``mx.gpu(i)`` can use (as ``mx.context.num_gpus()``).

    >>> get_gpu_count() >= 0
    True
    """
    return num_gpus()


def _device(where: str, dev_id: int) -> Any:
    n = num_gpus()
    if not isinstance(dev_id, int) or isinstance(dev_id, bool) or not 0 <= dev_id < n:
        why = ("" if n else " (numba.cuda sees none: a GPU needs an NVIDIA driver and pip install "
                            "'symjit[cuda]', or set NUMBA_ENABLE_CUDASIM=1 for numba's simulator)")
        raise MXNetError(f"util.{where}: no GPU {dev_id!r}: {n} GPU(s) are available{why}")
    from numba import cuda
    return cuda.gpus[dev_id]


def _whole(x: float) -> int | float:
    return int(x) if x != float("inf") else x


def get_gpu_memory(gpu_dev_id: int) -> tuple[int | float, int | float]:
    """``(free, total)`` bytes of GPU ``gpu_dev_id`` (numba's simulator reports infinity).

    >>> get_gpu_memory(99)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    symjit.base.MXNetError: util.get_gpu_memory: no GPU 99: ...
    """
    device = _device("get_gpu_memory", gpu_dev_id)
    with device:
        from numba import cuda
        free, total = cuda.current_context().get_memory_info()
    return _whole(free), _whole(total)


def get_cuda_compute_capability(ctx: Context) -> int:
    """The compute capability of a GPU context as one number (70 for ``sm_70``); a non-GPU context
    is a ValueError, as in MXNet.

    >>> get_cuda_compute_capability(Context('cpu'))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: util.get_cuda_compute_capability: expected a gpu context, got cpu(0)
    """
    if not isinstance(ctx, Context) or ctx.device.host_memory:
        raise ValueError(f"util.get_cuda_compute_capability: expected a gpu context, got {ctx}")
    major, minor = _device("get_cuda_compute_capability", ctx.device_id).compute_capability
    return major * 10 + minor
