"""Errors and dtype helpers shared by every layer.

One exception family: every error symjit raises on bad input is an :class:`MXNetError`
(also a ``ValueError`` or ``TypeError`` where that is the natural kind), and its message names
the operator, the argument and the shapes or dtypes involved.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MXNetError", "MXNetIndexError", "SymjitError", "ShapeError", "DTypeError", "ParamError", "FormatError",
    "DTYPE_TO_FLAG", "FLAG_TO_DTYPE", "np_dtype", "dtype_name", "shape_str", "write_atomic",
    "NotImplementedForSymbol", "py_str", "data_dir", "string_types", "integer_types", "numeric_types",
    "mx_real_t", "NDArrayHandle", "SymbolHandle",
]


class MXNetError(Exception):
    """Base class of every error symjit raises for bad input (named as MXNet names it).

    As in MXNet, a message that starts with ``IndexError:`` (a compiled program's index check)
    makes an :class:`MXNetIndexError`, which is also Python's ``IndexError``.

    >>> isinstance(MXNetError("IndexError: index 3 is outside [0, 3)"), IndexError)
    True
    """

    def __new__(cls, *args: object, **kwargs: object) -> MXNetError:
        if cls is MXNetError and args and isinstance(args[0], str) and args[0].startswith("IndexError:"):
            cls = MXNetIndexError
        return super().__new__(cls, *args, **kwargs)


class MXNetIndexError(MXNetError, IndexError):
    """An index value outside its axis, found when a compiled program runs."""


SymjitError = MXNetError


class ShapeError(MXNetError, ValueError):
    """A shape that does not fit an operator's rule."""


class DTypeError(MXNetError, TypeError):
    """A dtype that does not fit an operator's rule."""


class ParamError(MXNetError, ValueError):
    """A missing, unknown or invalid operator parameter."""


class FormatError(MXNetError, ValueError):
    """A malformed file: NDArray list file, ``.params`` checkpoint or symbol JSON."""


class DataDependentShape(MXNetError, ValueError):
    """An operator whose output shape depends on its input values (``contrib.boolean_mask``) used
    in a Symbol: symjit binds symbols with static shapes, so it runs on NDArrays only (a hybridized
    Gluon block using it runs imperatively, with a warning)."""


class NotImplementedForSymbol(MXNetError, TypeError):
    """An NDArray-only operation asked of a Symbol (``bool(sym)``, ...).

    >>> import symjit as mx
    >>> try:
    ...     bool(mx.sym.Variable('x'))
    ... except NotImplementedForSymbol as exc:
    ...     print(exc)
    Function __bool__ (namely operator "bool") is not implemented for Symbol and only available in NDArray.
    """

    def __init__(self, function: Callable | str, alias: str | None, *args: Any) -> None:
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self) -> str:
        what = f"Function {self.function}"
        if self.alias:
            what += f' (namely operator "{self.alias}")'
        if self.args:
            what += f" with arguments ({', '.join(self.args)})"
        return what + " is not implemented for Symbol and only available in NDArray."


# The Python-level helpers of MXNet's ``mxnet.base`` that programs import.
string_types = (str,)
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
mx_real_t = np.float32
# MXNet's opaque C handles. symjit has no C library; these are the same ctypes types so that code
# declaring handles still imports (no symjit function takes or returns one).
NDArrayHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p


def py_str(x: bytes | str) -> str:
    """A C library's byte string as ``str`` (UTF-8); a ``str`` is returned as it is.

    >>> py_str(b'fc1_weight'), py_str('fc1_bias')
    ('fc1_weight', 'fc1_bias')
    """
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else x


def _as_list(obj: Any) -> list | tuple:
    """``obj`` itself when it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def data_dir() -> str:
    """The folder MXNet keeps downloaded data in: ``$MXNET_HOME`` when set, else ``~/.mxnet``
    (``%APPDATA%/mxnet`` on Windows), read at each call.

    >>> import os
    >>> os.environ['MXNET_HOME'] = '/tmp/mxnet_data'
    >>> data_dir()
    '/tmp/mxnet_data'
    >>> del os.environ['MXNET_HOME']
    """
    if "MXNET_HOME" in os.environ:
        return os.environ["MXNET_HOME"]
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


# MXNet's dtype flags (mshadow type flags), used by the NDArray file format and symbol JSON.
DTYPE_TO_FLAG: dict[np.dtype, int] = {
    np.dtype("float32"): 0,
    np.dtype("float64"): 1,
    np.dtype("float16"): 2,
    np.dtype("uint8"): 3,
    np.dtype("int32"): 4,
    np.dtype("int8"): 5,
    np.dtype("int64"): 6,
    np.dtype("bool"): 7,
}
FLAG_TO_DTYPE: dict[int, np.dtype] = {v: k for k, v in DTYPE_TO_FLAG.items()}


def np_dtype(dtype: object) -> np.dtype:
    """Normalise a dtype given as a name, numpy type, numpy dtype or MXNet flag to ``np.dtype``.

    >>> np_dtype('float32'), np_dtype(np.int8), np_dtype(1)
    (dtype('float32'), dtype('int8'), dtype('float64'))
    """
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) not in FLAG_TO_DTYPE:
            raise DTypeError(f"unknown MXNet dtype flag {dtype}")
        return FLAG_TO_DTYPE[int(dtype)]
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"unknown dtype {dtype!r}") from exc
    if dt not in DTYPE_TO_FLAG:
        raise DTypeError(f"dtype {dt} is not supported (supported: {', '.join(map(str, DTYPE_TO_FLAG))})")
    return dt


def dtype_name(dtype: object) -> str:
    """The numpy name of a dtype, or ``?`` when it is unknown."""
    return "?" if dtype is None else np.dtype(dtype).name


def shape_str(shape: tuple[int, ...] | None) -> str:
    """A shape as MXNet prints it, ``?`` when it is unknown.

    >>> shape_str((100, 10)), shape_str((3,)), shape_str(None)
    ('(100,10)', '(3,)', '?')
    """
    if shape is None:
        return "?"
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ",".join(str(int(d)) for d in shape) + ")"


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write a file so that readers see either the old content or all of the new (a temporary
    file in the same directory, then ``os.replace``); the temporary is removed on failure."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def source_digest(roots: Iterable[str]) -> str:
    """A hash of the ``.py`` files under each folder of ``roots``: their ``/``-separated paths
    relative to it and their bytes, in sorted order (~5 ms for symjit and its kernels).

    >>> import symjit
    >>> len(source_digest(symjit.__path__))
    64
    """
    h = hashlib.sha256()
    for root in roots:
        for rel in _python_files(root):
            h.update(rel.encode())
            h.update(b"\0")
            with open(os.path.join(root, rel), "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _python_files(root: str) -> list[str]:
    """The ``.py`` files under ``root``, as sorted ``/``-separated relative paths."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, root)
        out += [f if rel == "." else f"{rel}/{f}".replace(os.sep, "/") for f in files if f.endswith(".py")]
    return sorted(out)
