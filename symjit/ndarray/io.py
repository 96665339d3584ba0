"""MXNet's binary NDArray list format: ``mx.nd.save`` / ``mx.nd.load`` (also ``.params`` files).

Layout (little-endian): ``uint64`` magic 0x112, ``uint64`` 0, ``uint64`` array count, the arrays,
then ``uint64`` name count and each name as ``uint64`` length + UTF-8 bytes. Each array is written
as MXNet 1.x writes a dense CPU array: ``uint32`` 0xF993FAC9, ``int32`` storage type 0, ``uint32``
ndim, ndim ``int64`` dims, ``int32`` device type 1, ``int32`` device id 0, ``int32`` dtype flag,
the raw C-order elements. A sparse array (storage type 1, row_sparse, or 2, csr) has after its
storage type the shape of its stored values, then its shape, context and dtype as above, then per
index array (row_sparse: indices; csr: indptr, indices) an ``int32`` dtype flag and its shape, then
the stored values and the index arrays' elements; what is read is checked as a sparse array made
in memory is (indices in range, sorted, unique) before it is used.

With NumPy shape semantics on (``mx.np_shape()``) each array is written as MXNet writes it then:
the magic 0xF993FACA and an ``int32`` ndim, which may be 0 (a 0-d array); such a file loads only
with NumPy shape semantics on, and a file of the classic magics only with them off, as in MXNet.
Reading also accepts the older per-array layouts: v1 (magic 0xF993FAC8, no storage type) and the
legacy one with no magic (``uint32`` ndim first, then ``uint32`` dims). Every count and length is
checked against the bytes that remain; empty (shape-less) arrays, unknown magics, storage types,
device types and dtype flags raise :class:`~symjit.base.FormatError` naming the file, the array
and the offset. Nothing read is ever executed. Arrays always load onto the CPU.

>>> import os, tempfile, symjit as mx
>>> path = os.path.join(tempfile.mkdtemp(), 'x.nd')
>>> mx.nd.save(path, {'w': mx.nd.ones((2, 2))})
>>> mx.nd.load(path)['w'].shape
(2, 2)
"""
from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ..base import DTYPE_TO_FLAG, FLAG_TO_DTYPE, DTypeError, FormatError, MXNetError
from ..context import cpu
from ..util import is_np_shape
from . import storage
from .ndarray import NDArray, wrap
from .sparse_array import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, check_csr_parts, check_rsp_parts

__all__ = ["save", "load", "load_frombuffer", "save_tobuffer"]

LIST_MAGIC = 0x112
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA   # NumPy shape semantics
V1_MAGIC = 0xF993FAC8
_LEGACY_MAX_NDIM = 32
_STYPES = {0: "default", 1: "row_sparse", 2: "csr"}
_STYPE_IDS = {v: k for k, v in _STYPES.items()}
_N_AUX = {1: 1, 2: 2}   # index arrays per sparse storage type
_DEVICES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}


# -- writing -------------------------------------------------------------------------------------

def _dims(shape: tuple) -> bytes:
    return struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}q", *shape)


def _sparse_bytes(arr: BaseSparseNDArray, where: str) -> bytes:
    """A sparse array as MXNet writes one: the header with the stored values' shape, then the
    shape, context, dtype, each index array's dtype and shape, the values, the index arrays
    (csr: indptr then indices; row_sparse: indices)."""
    data, aux = arr._parts()
    if data.dtype not in DTYPE_TO_FLAG:
        raise DTypeError(f"{where}: dtype {data.dtype} cannot be saved")
    aux = aux[::-1] if arr.stype == "csr" else aux      # kept as (indices, indptr); written indptr first
    parts = [struct.pack("<Ii", V3_MAGIC if is_np_shape() else V2_MAGIC, _STYPE_IDS[arr.stype]),
             _dims(data.shape), _dims(arr.shape), struct.pack("<iii", 1, 0, DTYPE_TO_FLAG[data.dtype])]
    for a in aux:
        parts += [struct.pack("<i", DTYPE_TO_FLAG[a.dtype]), _dims(a.shape)]
    parts.append(np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes())
    parts += [np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes() for a in aux]
    return b"".join(parts)


def _array_bytes(arr: NDArray, where: str) -> bytes:
    if isinstance(arr, BaseSparseNDArray):
        return _sparse_bytes(arr, where)
    host = arr._host()
    if host.dtype not in DTYPE_TO_FLAG:
        raise DTypeError(f"{where}: dtype {host.dtype} cannot be saved")
    parts = [struct.pack("<IiI", V3_MAGIC if is_np_shape() else V2_MAGIC, 0, host.ndim),
             struct.pack(f"<{host.ndim}q", *host.shape),
             struct.pack("<iii", 1, 0, DTYPE_TO_FLAG[host.dtype]),
             np.ascontiguousarray(host, dtype=host.dtype.newbyteorder("<")).tobytes()]
    return b"".join(parts)


def _split_data(data: Any) -> tuple[list[NDArray], list[str]]:
    if isinstance(data, NDArray):
        return [data], []
    if isinstance(data, dict):
        names, arrays = [], []
        for k, v in data.items():
            if not isinstance(k, str):
                raise DTypeError(f"save: dict keys must be str, got {type(k).__name__} {k!r}")
            names.append(k)
            arrays.append(v)
    elif isinstance(data, (list, tuple)):
        names, arrays = [], list(data)
    else:
        raise DTypeError(f"save: data must be an NDArray, a list of NDArrays or a dict of str to "
                         f"NDArray, got {type(data).__name__}")
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            label = names[i] if names else i
            raise DTypeError(f"save: element {label!r} must be an NDArray, got {type(a).__name__}")
        if a.ndim == 0 and not is_np_shape():
            raise FormatError(f"save: element {names[i] if names else i!r} has no dimensions; "
                              "MXNet 1.x stores 0-d arrays only with NumPy shape semantics (mx.np_shape())")
    return arrays, names


def save_tobuffer(data: Any) -> bytes:
    """The bytes :func:`save` would write (an NDArray, a list of them, or a dict of str to NDArray).

    >>> import symjit as mx
    >>> len(save_tobuffer([]))
    32
    """
    arrays, names = _split_data(data)
    out = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    out += [_array_bytes(a, "save") for a in arrays]
    out.append(struct.pack("<Q", len(names)))
    for n in names:
        raw = n.encode("utf-8")
        out.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(out)


def save(fname: str | os.PathLike, data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict of str to NDArray in MXNet's binary format.

    >>> import os, tempfile, symjit as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'l.nd')
    >>> mx.nd.save(path, [mx.nd.zeros((3,))])
    >>> [a.shape for a in mx.nd.load(path)]
    [(3,)]
    """
    buf = save_tobuffer(data)
    with open(fname, "wb") as f:
        f.write(buf)


# -- reading -------------------------------------------------------------------------------------

class _Reader:
    """Bounds-checked little-endian reads from a byte buffer."""

    def __init__(self, buf: bytes, where: str):
        self.buf = memoryview(buf)
        self.pos = 0
        self.where = where

    def left(self) -> int:
        return len(self.buf) - self.pos

    def fail(self, what: str) -> FormatError:
        return FormatError(f"{self.where}: {what} (at byte offset {self.pos} of {len(self.buf)})")

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or n > self.left():
            raise self.fail(f"file is truncated: {what} needs {n} bytes, only {self.left()} remain")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def one(self, fmt: str, what: str) -> int:
        return self.unpack(fmt, what)[0]


def _read_dims(r: _Reader, ndim: int, fmt: str, what: str) -> tuple[int, ...]:
    size = struct.calcsize("<" + fmt)
    if ndim * size > r.left():
        raise r.fail(f"file is truncated: {what} declares {ndim} dimensions but only {r.left()} bytes remain")
    dims = r.unpack(f"{ndim}{fmt}", f"{what} dimensions")
    if any(d < 0 for d in dims):
        raise r.fail(f"{what} has a negative dimension in shape {dims}")
    return tuple(int(d) for d in dims)


def _read_shape(r: _Reader, label: str) -> tuple[int, tuple | None, tuple[int, ...]]:
    """An array's header: (storage type, the stored values' shape (sparse only), shape)."""
    magic = r.one("I", f"{label} magic")
    if (magic == V3_MAGIC) != is_np_shape():
        saved, now = ("with", "off") if magic == V3_MAGIC else ("without", "on")
        raise r.fail(f"{label} was saved {saved} NumPy shape semantics and they are {now} now; load it "
                     f"under the semantics it was saved with (mx.np_shape({magic == V3_MAGIC}))")
    stype, stored = 0, None
    if magic in (V2_MAGIC, V3_MAGIC):
        stype = r.one("i", f"{label} storage type")
        if stype not in _STYPES:
            raise r.fail(f"{label} uses an unknown storage type {stype}")
        if stype:
            stored = _read_ndim_dims(r, magic, f"{label} stored values")
    if magic in (V1_MAGIC, V2_MAGIC, V3_MAGIC):
        return stype, stored, _read_ndim_dims(r, magic, label)
    if magic <= _LEGACY_MAX_NDIM:  # legacy layout: no magic, the word read is ndim
        return 0, None, _read_dims(r, magic, "I", label)
    raise r.fail(f"{label} has an unknown magic number 0x{magic:08X} (expected 0x{V2_MAGIC:08X})")


def _read_ndim_dims(r: _Reader, magic: int, what: str) -> tuple[int, ...]:
    ndim = r.one("i" if magic == V3_MAGIC else "I", f"{what} ndim")
    if ndim < 0 or ndim > 0x7FFFFFFF:
        raise r.fail(f"{what} is an empty NDArray with no shape, which is not supported")
    return _read_dims(r, ndim, "q", what)


def _read_values(r: _Reader, shape: tuple, dt: np.dtype, what: str) -> np.ndarray:
    count = 1
    for d in shape:
        count *= d
    nbytes = count * dt.itemsize
    if nbytes > r.left():
        raise r.fail(f"file is truncated: {what} of shape {shape} and dtype {dt.name} needs "
                     f"{nbytes} bytes of data, only {r.left()} remain")
    raw = r.take(nbytes, f"{what} data")
    return np.frombuffer(raw, dtype=dt.newbyteorder("<"), count=count).astype(dt).reshape(shape)


def _read_dtype(r: _Reader, flag: int, what: str) -> np.dtype:
    if flag not in FLAG_TO_DTYPE:
        raise r.fail(f"{what} has an unknown dtype flag {flag} (known: {sorted(FLAG_TO_DTYPE)})")
    return FLAG_TO_DTYPE[flag]


def _read_sparse(r: _Reader, label: str, stype: int, stored: tuple, shape: tuple, dt: np.dtype) -> NDArray:
    """The rest of a sparse array's record (after its dtype): checked index arrays, the values."""
    heads = []
    for i in range(_N_AUX[stype]):
        adt = _read_dtype(r, r.one("i", f"{label} index {i} dtype"), f"{label} index {i}")
        if adt.kind not in "iu":
            raise r.fail(f"{label} index array {i} has dtype {adt.name}; expected integers")
        heads.append((adt, _read_dims(r, r.one("I", f"{label} index {i} ndim"), "q", f"{label} index {i}")))
    data = _read_values(r, stored, dt, label)
    aux = [_read_values(r, s, adt, f"{label} index {i}").astype(np.int64) for i, (adt, s) in enumerate(heads)]
    kind = _STYPES[stype]
    try:
        if kind == "row_sparse":
            check_rsp_parts(shape, data, aux[0], label)
            return RowSparseNDArray(shape, data, (aux[0],), cpu())
        check_csr_parts(shape, data, aux[1], aux[0], label)
        return CSRNDArray(shape, data, (aux[1], aux[0]), cpu())
    except MXNetError as exc:
        raise r.fail(f"{label}: invalid {kind} array: {exc}") from None


def _read_array(r: _Reader, label: str) -> np.ndarray | NDArray:
    stype, stored, shape = _read_shape(r, label)
    if len(shape) == 0 and not is_np_shape():
        raise r.fail(f"{label} is an empty NDArray with no shape, which is not supported")
    dev_type, dev_id, flag = r.unpack("iii", f"{label} context and dtype")
    if dev_type not in _DEVICES or dev_id < 0:
        raise r.fail(f"{label} has an invalid device (type {dev_type}, id {dev_id})")
    dt = _read_dtype(r, flag, label)
    if stype:
        return _read_sparse(r, label, stype, stored, shape, dt)
    return _read_values(r, shape, dt, label)


def _read_names(r: _Reader, n_arrays: int) -> list[str]:
    n_names = r.one("Q", "name count")
    if n_names not in (0, n_arrays):
        raise r.fail(f"name count {n_names} does not match the array count {n_arrays}")
    names = []
    for i in range(n_names):
        length = r.one("Q", f"length of name {i}")
        raw = bytes(r.take(length, f"name {i}"))
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {i} is not valid UTF-8") from None
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise r.fail(f"duplicate array names {dup}")
    return names


def _parse(buf: bytes, where: str) -> list[np.ndarray] | dict[str, np.ndarray]:
    r = _Reader(buf, where)
    if r.left() < 24:
        raise r.fail(f"file is too short ({len(buf)} bytes) to be an NDArray list file")
    magic, _reserved = r.unpack("QQ", "header")
    if magic != LIST_MAGIC:
        raise FormatError(f"{where}: not an MXNet NDArray list file: magic 0x{magic:X}, expected "
                          f"0x{LIST_MAGIC:X}")
    n = r.one("Q", "array count")
    min_array = 4 + 12  # a magic/ndim word plus context and dtype
    if n * min_array > r.left():
        raise r.fail(f"file is truncated or corrupt: array count {n} cannot fit in the {r.left()} "
                     "bytes that remain")
    arrays = [_read_array(r, f"array {i}") for i in range(n)]
    names = _read_names(r, n)
    if r.left():
        raise r.fail(f"{r.left()} unexpected bytes after the last name")
    return dict(zip(names, arrays)) if names else arrays


def _wrap_all(parsed: list | dict) -> list[NDArray] | dict[str, NDArray]:
    ctx = cpu()
    # a 0-d array (only in a file of NumPy shape semantics) stays 0-d
    def one(v: Any) -> NDArray:
        if isinstance(v, NDArray):      # a sparse array
            return v
        return NDArray(storage.alloc((), v.dtype, ctx, v), ctx) if v.ndim == 0 else wrap(v, ctx)
    if isinstance(parsed, dict):
        return {k: one(v) for k, v in parsed.items()}
    return [one(v) for v in parsed]


def load_frombuffer(buf: bytes) -> list[NDArray] | dict[str, NDArray]:
    """Load arrays from the bytes of an NDArray list file (see :func:`load`).

    >>> import symjit as mx
    >>> mx.nd.load_frombuffer(save_tobuffer({'a': mx.nd.ones((1,))}))['a'].asnumpy().tolist()
    [1.0]
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise DTypeError(f"load_frombuffer: expected bytes, got {type(buf).__name__}")
    return _wrap_all(_parse(bytes(buf), "load_frombuffer"))


def load(fname: str | os.PathLike) -> list[NDArray] | dict[str, NDArray]:
    """Load a file written by ``mx.nd.save`` (or MXNet): a list, or a dict when the file has names.

    >>> import os, tempfile, symjit as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'd.nd')
    >>> mx.nd.save(path, {'a': mx.nd.array([1, 2], dtype='int32')})
    >>> mx.nd.load(path)['a'].asnumpy().tolist()
    [1, 2]
    """
    if not isinstance(fname, (str, os.PathLike)):
        raise DTypeError(f"load: fname must be a path, got {type(fname).__name__}")
    with open(fname, "rb") as f:
        buf = f.read()
    return _wrap_all(_parse(buf, f"load('{os.fspath(fname)}')"))


def array_from_raw_bytes(buf: bytes, where: str = "array_from_raw_bytes") -> NDArray:
    """One array in MXNet's per-array layout (what MXNet's ``MXNDArraySaveRawBytes`` writes, and
    so what a pickled MXNet NDArray holds), onto the CPU; the whole buffer must be that array.

    >>> import symjit as mx
    >>> raw = mx.nd.save_tobuffer([mx.nd.ones((2,))])[24:-8]   # the list file's one array record
    >>> array_from_raw_bytes(raw).asnumpy().tolist()
    [1.0, 1.0]
    """
    r = _Reader(bytes(buf), where)
    arr = _read_array(r, "the array")
    if r.left():
        raise r.fail(f"{r.left()} unexpected bytes after the array")
    return arr if isinstance(arr, NDArray) else wrap(arr, cpu())
