"""Optimizer-state files written by MXNet 1.x (``Updater.get_states``, ``Module.save_optimizer_states``):
a pickle of ``{index: state}`` (or of ``(states, optimizer)``), each state None, an NDArray or a
tuple of them, each NDArray pickled as its bytes in MXNet's per-array layout.

They are read without unpickling: :func:`read_mxnet_states` walks the pickle's opcodes
(``pickletools.genops`` decodes them, nothing is imported or called) over a small stack machine
that knows dicts, tuples, lists, numbers, strings, bytes and MXNet's NDArray (its bytes parsed by
:func:`symjit.ndarray.io.array_from_raw_bytes`). Any other object is kept as an opaque record and
refused where a state needs an array; MXNet's pickled optimizer object is never rebuilt (the
optimizer the states are loaded into keeps its settings).

>>> import pickle, symjit as mx
>>> read_mxnet_states(pickle.dumps({0: None, 1: (None, None)}))
({0: None, 1: (None, None)}, False)
"""
from __future__ import annotations

import pickletools
from typing import Any

from .base import FormatError
from .ndarray import NDArray
from .ndarray.io import array_from_raw_bytes

__all__ = ["is_pickle", "read_mxnet_states"]

_NDARRAY = {("mxnet.ndarray.ndarray", "NDArray"), ("mxnet.ndarray", "NDArray")}
_MAX_DEPTH = 16


def is_pickle(buf: bytes) -> bool:
    """Whether ``buf`` starts like a pickle of protocol 2 or later."""
    return len(buf) >= 2 and buf[0] == 0x80 and 2 <= buf[1] <= 5


class _Global:
    """A ``module.name`` a pickle refers to: recorded, never imported."""

    def __init__(self, module: str, name: str):
        self.key = (module, name)

    def __repr__(self) -> str:
        return ".".join(self.key)


class _Opaque:
    """An object the pickle would build by calling ``what``; only its description is kept."""

    def __init__(self, what: Any):
        self.what = what
        self.state: Any = None

    def __repr__(self) -> str:
        return f"<{self.what!r} object>"


class _PendingArray:
    """MXNet's ``NDArray(None)``, which the pickle's BUILD then fills from ``{'handle': bytes}``."""

    array: NDArray | None = None


def _call(fn: Any, args: Any, where: str) -> Any:
    key = fn.key if isinstance(fn, _Global) else None
    if key in _NDARRAY:
        return _PendingArray()
    if key == ("builtins", "bytearray") and isinstance(args, tuple) and len(args) <= 1:
        return bytearray(args[0]) if args else bytearray()
    if key == ("_codecs", "encode") and isinstance(args, tuple) and len(args) == 2 \
            and all(isinstance(a, str) for a in args) and args[1] == "latin1":
        return args[0].encode("latin1")           # bytes as protocol 2 writes them
    return _Opaque(fn)


def _build(obj: Any, state: Any, where: str) -> Any:
    if isinstance(obj, _PendingArray):
        raw = state.get("handle") if isinstance(state, dict) else None
        if raw is None:
            raise FormatError(f"{where}: a pickled MXNet NDArray holds no data")
        if not isinstance(raw, (bytes, bytearray)):
            raise FormatError(f"{where}: a pickled MXNet NDArray's data is {type(raw).__name__}, not bytes")
        obj.array = array_from_raw_bytes(raw, f"{where} (a pickled NDArray)")
    elif isinstance(obj, _Opaque):
        obj.state = state
    else:
        raise FormatError(f"{where}: cannot set the state of a {type(obj).__name__}")
    return obj


def _pop_mark(stack: list, marks: list, where: str) -> list:
    if not marks:
        raise FormatError(f"{where}: malformed pickle (no MARK)")
    at = marks.pop()
    items = stack[at:]
    del stack[at:]
    return items


_CONST = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False, "EMPTY_DICT": dict, "EMPTY_LIST": list,
          "EMPTY_TUPLE": tuple}
_VALUE_OPS = {"BININT", "BININT1", "BININT2", "INT", "LONG1", "LONG4", "LONG", "BINFLOAT", "FLOAT",
              "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "BINBYTES", "SHORT_BINBYTES",
              "BINBYTES8", "BINSTRING", "SHORT_BINSTRING"}


def _run(buf: bytes, where: str) -> Any:
    stack: list = []
    marks: list = []
    memo: dict = {}
    try:
        ops = list(pickletools.genops(buf))
    except (ValueError, EOFError, UnicodeDecodeError) as exc:
        raise FormatError(f"{where}: not a readable pickle: {exc}") from None
    for op, arg, _pos in ops:
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name in _CONST:
            value = _CONST[name]
            stack.append(value() if isinstance(value, type) else value)
        elif name in _VALUE_OPS:
            stack.append(arg)
        elif name == "BYTEARRAY8":
            stack.append(bytearray(arg))
        elif name == "MARK":
            marks.append(len(stack))
        elif name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
            if not stack:
                raise FormatError(f"{where}: malformed pickle ({name} on an empty stack)")
            memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            if arg not in memo:
                raise FormatError(f"{where}: malformed pickle (memo entry {arg} is missing)")
            stack.append(memo[arg])
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            items = tuple(stack[len(stack) - n:])
            del stack[len(stack) - n:]
            stack.append(items)
        elif name == "TUPLE":
            stack.append(tuple(_pop_mark(stack, marks, where)))
        elif name == "LIST":
            stack.append(_pop_mark(stack, marks, where))
        elif name == "DICT":
            items = _pop_mark(stack, marks, where)
            stack.append(dict(zip(items[::2], items[1::2])))
        elif name in ("APPEND", "APPENDS"):
            items = [stack.pop()] if name == "APPEND" else _pop_mark(stack, marks, where)
            if not stack or not isinstance(stack[-1], list):
                raise FormatError(f"{where}: malformed pickle ({name} onto a non-list)")
            stack[-1].extend(items)
        elif name in ("SETITEM", "SETITEMS"):
            items = stack[-2:] if name == "SETITEM" else _pop_mark(stack, marks, where)
            if name == "SETITEM":
                del stack[-2:]
            if not stack or not isinstance(stack[-1], dict):
                raise FormatError(f"{where}: malformed pickle ({name} onto a non-dict)")
            for k, v in zip(items[::2], items[1::2]):
                if isinstance(k, (dict, list, bytearray, _Opaque, _PendingArray)):
                    raise FormatError(f"{where}: a dict key of type {type(k).__name__} is not supported")
                stack[-1][k] = v
        elif name == "GLOBAL":
            module, _, attr = str(arg).partition(" ")
            stack.append(_Global(module, attr))
        elif name == "STACK_GLOBAL":
            attr, module = stack.pop(), stack.pop()
            stack.append(_Global(str(module), str(attr)))
        elif name == "REDUCE":
            args = stack.pop()
            stack.append(_call(stack.pop(), args, where))
        elif name in ("NEWOBJ", "NEWOBJ_EX"):
            if name == "NEWOBJ_EX":
                stack.pop()
            args = stack.pop()
            stack.append(_call(stack.pop(), args, where))
        elif name == "BUILD":
            state = stack.pop()
            stack.append(_build(stack.pop(), state, where))
        elif name == "STOP":
            if len(stack) != 1:
                raise FormatError(f"{where}: malformed pickle ({len(stack)} values left at STOP)")
            return stack[0]
        else:
            raise FormatError(f"{where}: the pickle uses {name}, which an optimizer-state file of "
                              "MXNet does not (nothing was executed)")
    raise FormatError(f"{where}: the pickle has no STOP")


def _state(value: Any, where: str, depth: int = 0) -> Any:
    if value is None or isinstance(value, NDArray):
        return value
    if isinstance(value, _PendingArray):
        if value.array is None:
            raise FormatError(f"{where}: a pickled MXNet NDArray was never filled")
        return value.array
    if isinstance(value, (tuple, list)) and depth < _MAX_DEPTH:
        return tuple(_state(v, where, depth + 1) for v in value)
    raise FormatError(f"{where}: a state of type {value!r:.60} is not None, an NDArray or a tuple of them")


def read_mxnet_states(buf: bytes, where: str = "Updater.set_states") -> tuple[dict, bool]:
    """``({index: state}, optimizer_given)`` from MXNet's pickled optimizer states; states are
    None, NDArrays (on the CPU) or tuples of them. ``optimizer_given`` says the file also held
    MXNet's pickled optimizer (``dump_optimizer=True``), which is not read."""
    value = _run(bytes(buf), where)
    given = False
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], dict):
        value, given = value[0], True
    if not isinstance(value, dict):
        raise FormatError(f"{where}: an MXNet optimizer-state pickle holds a dict of states, got "
                          f"{type(value).__name__}")
    out = {}
    for key, state in value.items():
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise FormatError(f"{where}: parameter index {key!r:.40} must be an int or a str")
        out[key] = _state(state, f"{where} (index {key!r})")
    return out, given
