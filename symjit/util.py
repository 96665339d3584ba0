"""``mx.util``: MXNet 1.9.1's helper functions, with the classic (non-NumPy) semantics symjit has.

symjit implements MXNet's classic arrays and shapes (``mx.nd``, ``mx.sym``: 0 in a shape means an
unknown size, no 0-d arrays). MXNet's NumPy semantics (``mx.np``, ``set_np``) are not there, so
:func:`is_np_shape` and :func:`is_np_array` are always False; turning them off is accepted and
turning them on is a :class:`NumpySemanticsUnsupported` error, and so is calling a function the
``use_np*`` decorators wrapped (decorating works, so a module that decorates some of its functions
still imports).
The top-level names MXNet exports from here (``mx.is_np_shape``, ``mx.np_shape``, ``mx.use_np``,
...) are these functions. The environment functions read and write ``os.environ``; the GPU
functions ask numba.cuda (0 GPUs without numba-cuda or a GPU; numba's CUDA simulator counts as one).

>>> import symjit as mx
>>> mx.util.is_np_shape(), mx.is_np_array()
(False, False)
>>> with mx.np_shape(False):
...     pass
>>> mx.util.set_np()  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
symjit.util.NumpySemanticsUnsupported: util.set_np: MXNet's NumPy semantics are not supported ...
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .base import MXNetError
from .context import Context, num_gpus

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
           "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv", "makedirs",
           "get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability", "NumpySemanticsUnsupported"]

_WHY = ("MXNet's NumPy semantics are not supported by symjit, which implements the classic mx.nd/mx.sym "
        "arrays and shapes (0 is an unknown size, no 0-d arrays); mx.np and mx.npx are not there yet")


class NumpySemanticsUnsupported(MXNetError, NotImplementedError):
    """Asked to turn on MXNet's NumPy shape or array semantics."""


def _refuse(where: str) -> NumpySemanticsUnsupported:
    return NumpySemanticsUnsupported(f"util.{where}: {_WHY}")


def is_np_shape() -> bool:
    """Whether NumPy shape semantics are on: never in symjit.

    >>> is_np_shape()
    False
    """
    return False


def is_np_array() -> bool:
    """Whether NumPy array semantics are on: never in symjit.

    >>> is_np_array()
    False
    """
    return False


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics off (accepted) or on (an error); returns the previous state.

    >>> set_np_shape(False)
    False
    """
    if active:
        raise _refuse("set_np_shape(True)")
    return False


def set_np(shape: bool = True, array: bool = True) -> None:
    """Turn NumPy shape and array semantics off (``set_np(False, False)``, accepted) or on (an error).

    >>> set_np(shape=False, array=False)
    """
    if not shape and array:   # MXNet's own rule, checked first as it does
        raise ValueError("util.set_np: NumPy shape semantics are required for NumPy array semantics")
    if shape or array:
        raise _refuse("set_np")


def reset_np() -> None:
    """Turn NumPy shape and array semantics off (they are never on in symjit).

    >>> reset_np()
    """
    set_np(shape=False, array=False)


class _Scope:
    """``with np_shape(active):`` / ``with np_array(active):``: a no-op when ``active`` is False."""

    def __init__(self, where: str, active: bool):
        self._where, self._active = where, bool(active)

    def __enter__(self) -> _Scope:
        if self._active:
            raise _refuse(f"{self._where}(True)")
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None) -> None:
        return None


def np_shape(active: bool = True) -> _Scope:
    """A scope with NumPy shape semantics on (an error on entry) or off (no change).

    >>> with np_shape(active=False):
    ...     is_np_shape()
    False
    """
    return _Scope("np_shape", active)


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
    """MXNet's decorator running ``func`` with NumPy shape semantics: decorating works, calling the
    result raises :class:`NumpySemanticsUnsupported`.

    >>> scalar_one = use_np_shape(lambda: 1)
    >>> scalar_one()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    symjit.util.NumpySemanticsUnsupported: util.use_np_shape: ...
    """
    return _refusing(func, "use_np_shape")


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
