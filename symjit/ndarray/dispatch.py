"""The seam between NDArray and the compiled operators, which live in layers above it.

NDArray arithmetic and the ``mx.nd`` functions run the registered operator's compiled kernels on
the arrays' device (:mod:`symjit.imperative`, which needs the symbol layer and the compiler). That
module installs its ``invoke`` and its ``mx.nd`` functions here when ``symjit`` is imported, so this
layer never imports upwards; calling before that is a clear error.

>>> import symjit as mx
>>> on_gpu(mx.nd.ones((1,)))
False
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import MXNetError

__all__ = ["install", "invoke", "invoke1", "on_gpu", "install_function", "function",
           "install_recorder", "recorded", "plain", "PENDING", "settle", "install_assign", "assign"]

_INVOKE: list[Callable[..., list]] = []
_FUNCTIONS: dict[str, Callable[..., Any]] = {}
_RECORDER: list[Callable[..., Any]] = []
_ASSIGN: list[Callable[..., bool]] = []

PENDING: list[Callable[[], None]] = []
"""The flush of the lazy engine's queue (:mod:`symjit.lazy`) while it holds work, else empty:
reading an NDArray's storage (``NDArray._data``) runs it first, so every value read is current."""


def settle() -> None:
    """Run whatever NDArray work is queued (nothing when the queue is empty).

    >>> settle()
    """
    try:
        flush = PENDING[0]
    except IndexError:      # nothing queued (or another thread ran it just now)
        return
    flush()


def install_assign(fn: Callable[..., bool]) -> None:
    """Make ``fn(dst, key, value) -> bool`` the hook :func:`assign` asks (the lazy engine's)."""
    _ASSIGN[:] = [fn]


def assign(dst: Any, key: Any, value: Any) -> bool:
    """Hand ``dst[key] = value`` (``value`` an NDArray) to the installed hook, which queues it
    and returns True, or returns False to have it done at once."""
    return bool(_ASSIGN) and _ASSIGN[0](dst, key, value)


def install_recorder(fn: Callable[..., Any]) -> None:
    """Make ``fn(method, result, source, *args)`` the hook :func:`recorded` calls (autograd's)."""
    _RECORDER[:] = [fn]


def recorded(method: str, result: Any, source: Any, *args: Any) -> Any:
    """An NDArray method that makes or writes an array without an operator call (a view, a
    slice, a copy, a cast, an assignment), handed to the installed recorder so that
    ``mx.autograd`` can record it as the equivalent operator: ``result`` (the array the method
    made from ``source`` with ``args``) is returned; ``'setitem'`` and ``'copyto'`` are done by
    the hook (:func:`plain`)."""
    if _RECORDER:
        return _RECORDER[0](method, result, source, *args)
    return plain(method, result, source, *args)


def plain(method: str, result: Any, source: Any, *args: Any) -> Any:
    """:func:`recorded` without recording: the assignment or copy done, or ``result``."""
    if method == "setitem":
        return source._setitem(*args)
    if method == "copyto":
        return source._copyto(*args)
    return result


def install_function(name: str, fn: Callable[..., Any]) -> None:
    """Make ``fn`` the ``mx.nd`` function of the registered operator ``name`` that NDArray
    arithmetic and the hand-written ``mx.nd`` functions call (with its fast path for repeated
    calls)."""
    _FUNCTIONS[name] = fn


def function(name: str) -> Callable[..., Any]:
    """The installed ``mx.nd`` function of operator ``name``."""
    fn = _FUNCTIONS.get(name)
    if fn is None:
        raise MXNetError(f"{name}: NDArray arithmetic needs the compiler: import symjit first")
    return fn


def install(fn: Callable[..., list]) -> None:
    """Make ``fn(op, inputs, params, out, where) -> list[NDArray]`` the imperative op call."""
    _INVOKE[:] = [fn]


def invoke(op: str, inputs: list, params: dict | None = None, out: Any = None,
           where: str | None = None, ctx: Any = None) -> list:
    """Run the registered operator ``op`` on NDArrays (see :func:`symjit.imperative.invoke`);
    an operator without inputs runs on ``ctx``."""
    if not _INVOKE:
        raise MXNetError(f"{where or op}: operators on device arrays need the compiler: "
                         "import symjit first")
    return _INVOKE[0](op, inputs, params or {}, out, where, ctx)


def invoke1(op: str, inputs: list, params: dict | None = None, out: Any = None,
            where: str | None = None) -> Any:
    """:func:`invoke` for an operator with one output: that output."""
    return invoke(op, inputs, params, [out] if out is not None else None, where)[0]


def on_gpu(*arrays: Any) -> bool:
    """True when the first NDArray among ``arrays`` lives on a GPU (the operator then runs there)."""
    for a in arrays:
        ctx = getattr(a, "context", None)
        if ctx is not None and hasattr(a, "_store"):
            return not ctx.device.host_memory
    return False
