"""How ``mx.autograd`` records the NDArray methods that make arrays without an operator call.

Views, indexing, ``T``, ``astype``, ``copyto`` and assignment call
``ndarray.dispatch.recorded``; while recording, :func:`method_hook` (installed by
:mod:`symjit.autograd`) records what they made as the equivalent registered operators
(``Reshape``, ``slice_axis``, ``take``, ``transpose``, ``Cast``, ``_copy``, ``where`` with
``scatter_nd``).

>>> import symjit as mx
>>> x = mx.nd.array([1.0, 2.0, 3.0]); x.attach_grad()
>>> with mx.autograd.record():
...     y = x[1:] * 2
>>> y.backward(); x.grad.asnumpy().tolist()
[0.0, 2.0, 2.0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .autograd_tape import Entry, constant, history, no_variable_write, source_of, tracked
from .base import MXNetError
from .context import Context
from .imperative import MODE
from .ndarray import NDArray, dispatch

__all__ = ["method_hook", "detach"]


# --- NDArray methods that make arrays without an operator call --------------------------------

def _chain(result: NDArray, first: Any, steps: list, where: str) -> NDArray:
    """Record ``result`` as the operators ``steps`` (op, params, extra inputs: constant arrays)
    applied in turn to ``first`` (an array, or a node of an earlier chain)."""
    src = source_of(first, where)
    for op, params, extra in steps:
        pairs = [src] + [(c, c._cell()[0]) for c in extra]
        entry = Entry(op, params, [s for s, _ in pairs], 1, MODE.training, [v for _, v in pairs])
        src = ((entry, 0), None)
    result._ag_node, result._ag_ver = src[0], result._cell()[0]
    return result


def _const(a: np.ndarray, like: NDArray) -> NDArray:
    from .ndarray.ndarray import wrap
    return wrap(np.ascontiguousarray(a), like.context)


def _positions(shape: tuple, key: Any) -> np.ndarray:
    """The flat positions ``array[key]`` selects from an array of ``shape``, in the result's shape."""
    from .ndarray.ndarray import _index_array
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[_index_array(key)]


def _getitem(result: NDArray, x: NDArray, key: Any) -> NDArray:
    where = "NDArray.__getitem__"
    if isinstance(key, int):                                      # a row: slice_axis + Reshape
        return _chain(result, x, [("slice_axis", {"axis": 0, "begin": key, "end": key + 1}, []),
                                  ("Reshape", {"shape": result.shape}, [])], where)
    if isinstance(key, slice) and key.step in (None, 1):
        begin, end, _ = key.indices(x.shape[0])
        return _chain(result, x, [("slice_axis", {"axis": 0, "begin": begin, "end": max(begin, end)}, []),
                                  ("Reshape", {"shape": result.shape}, [])], where)
    pos = _positions(x.shape, key).reshape(-1)        # any other key: take from the flat array
    return _chain(result, x, [("Reshape", {"shape": (-1,)}, []),
                              ("take", {"axis": 0}, [_const(pos, x)]),
                              ("Reshape", {"shape": result.shape}, [])], where)


def _setitem(_: None, x: NDArray, key: Any, value: Any) -> None:
    where = "NDArray.__setitem__"
    traced = isinstance(value, NDArray) and tracked(value)
    if not (traced or tracked(x)):
        x._setitem(key, value)
        return
    no_variable_write(x, where)
    if history(x) is not None:
        old = source_of(x, where)
    else:                                    # an array no recording reached: its values as they were
        snap = x._copyto(x.context)
        old = (snap, snap._cell()[0])
    x._setitem(key, value)
    pos = _positions(x.shape, key)
    mask = np.zeros(x.size, dtype=x.dtype)
    mask[pos.reshape(-1)] = 1
    mask = _const(mask.reshape(x.shape), x)
    if not traced:                           # the assigned values are constants
        new = x._copyto(x.context)
        _assigned(x, mask, (new, new._cell()[0]), old)
        return
    if pos.size != np.unique(pos).size:
        raise MXNetError(f"{where}: an assignment to repeated positions of a recorded array is not "
                         "supported while recording")
    steps: list = []
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        steps.append(("Cast", {"dtype": np.dtype(x.dtype).name}, []))
    sel = pos.shape or (1,)
    if value.shape != sel:
        if value.size == 1:
            steps.append(("Reshape", {"shape": (1,) * len(sel)}, []))
        elif value.ndim < len(sel):
            steps.append(("Reshape", {"shape": (1,) * (len(sel) - value.ndim) + value.shape}, []))
        steps.append(("broadcast_to", {"shape": sel}, []))
    steps += [("Reshape", {"shape": (-1,)}, []),
              ("scatter_nd", {"shape": (x.size,)}, [_const(pos.reshape(1, -1), x)]),
              ("Reshape", {"shape": x.shape}, [])]
    tmp = NDArray.__new__(NDArray)
    _chain(tmp, value, steps, where)
    _assigned(x, mask, (tmp._ag_node, None), old)


def _assigned(x: NDArray, mask: NDArray, new: tuple, old: tuple) -> None:
    """Record ``x`` after an assignment: ``where(mask, new, old)`` (sources with write counts)."""
    entry = Entry("where", {}, [mask, new[0], old[0]], 1, MODE.training, [mask._cell()[0], new[1], old[1]])
    x._ag_node, x._ag_ver = (entry, 0), x._cell()[0]


def _copyto(_: None, x: NDArray, other: Any) -> NDArray:
    where = "NDArray.copyto"
    if isinstance(other, NDArray):
        if other is x or not (tracked(x) or tracked(other)):
            return x._copyto(other)
        if tracked(x):
            no_variable_write(other, where)
        out = x._copyto(other)
        if not tracked(x):
            return constant(out)
        dt = np.dtype(out.dtype)
        step = ("_copy", {}, []) if dt == np.dtype(x.dtype) else ("Cast", {"dtype": dt.name}, [])
        return _chain(out, x, [step], where)
    out = x._copyto(other)
    if not tracked(x):
        return out
    if isinstance(other, Context) and other != x.context:
        raise MXNetError(f"{where}: copying a recorded array from {x.context} to {other} while "
                         "recording is not supported by symjit's autograd; move the variables first")
    return _chain(out, x, [("_copy", {}, [])], where)


def method_hook(method: str, result: Any, x: NDArray, *args: Any) -> Any:
    """The hook NDArray methods call (:func:`symjit.ndarray.dispatch.recorded`): while recording,
    record what the method made from a tracked array as the equivalent operator."""
    if not MODE.recording:
        return dispatch.plain(method, result, x, *args)
    if method == "setitem":
        return _setitem(result, x, *args)
    if method == "copyto":
        return _copyto(result, x, *args)
    if not tracked(x):
        return result
    where = f"NDArray.{method}"
    if method == "getitem":
        return _getitem(result, x, args[0])
    if method == "reshape":
        return _chain(result, x, [("Reshape", {"shape": args[0]}, [])], where)
    if method == "astype":
        return _chain(result, x, [("Cast", {"dtype": args[0].name}, [])], where)
    if method == "T":
        return _chain(result, x, [("transpose", {"axes": ()}, [])], where)
    raise MXNetError(f"{where}: this NDArray method cannot be recorded by symjit's autograd")


def detach(self: NDArray) -> NDArray:
    """A new NDArray sharing this one's storage, outside the recording (a leaf).

    >>> import symjit as mx
    >>> x = mx.nd.ones((2,)); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (x * 2).detach() * x
    >>> y.backward(); x.grad.asnumpy().tolist()
    [2.0, 2.0]
    """
    return self._view(self._data)
