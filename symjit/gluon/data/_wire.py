"""The DataLoader's wire format between its worker processes and the loader: a batch as a JSON
description of its structure plus the raw bytes of its arrays, never a pickle, so nothing a worker
sends is executed when it is read.

A value is NDArrays, numpy arrays and scalars, Python numbers, strings, bytes and None, nested in
lists, tuples and dicts with string or int keys; anything else is an error naming its type (in the
worker, where the batch was made). :func:`send` writes a message (its description, then one
message per array), :func:`recv` reads one, the arrays straight into fresh numpy buffers.

>>> import numpy as np
>>> from multiprocessing import Pipe
>>> r, w = Pipe(duplex=False)
>>> send(w, {"seq": 1}, [np.arange(3), ("a", 2.5, None)])
>>> head, value = recv(r, lambda a: a)
>>> head["seq"], value[0].tolist(), value[1]
(1, [0, 1, 2], ('a', 2.5, None))
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ...base import MXNetError
from ...ndarray.ndarray import NDArray

__all__ = ["send", "recv", "describe", "task_bytes", "recv_task"]


def describe(value: Any, arrays: list[np.ndarray], where: str) -> Any:
    """The JSON description of ``value``; its arrays are appended to ``arrays``."""
    if value is None or isinstance(value, (bool, str)):
        return {"t": "v", "v": value}
    if isinstance(value, int):
        return {"t": "i", "v": str(value)}
    if isinstance(value, float):
        return {"t": "f", "v": repr(value)}
    if isinstance(value, (NDArray, np.ndarray, np.generic)):
        host = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
        if host.dtype.hasobject or host.dtype.fields is not None:
            raise MXNetError(f"{where}: cannot send an array of dtype {host.dtype} from a worker "
                             "process (numeric arrays only)")
        arrays.append(np.ascontiguousarray(host))
        kind = "nd" if isinstance(value, NDArray) else "np" if isinstance(value, np.ndarray) else "sc"
        return {"t": kind, "d": host.dtype.str, "s": list(host.shape)}
    if isinstance(value, (bytes, bytearray)):
        arrays.append(np.frombuffer(bytes(value), dtype=np.uint8))
        return {"t": "y"}
    if isinstance(value, (list, tuple)):
        return {"t": "l" if isinstance(value, list) else "u",
                "v": [describe(v, arrays, where) for v in value]}
    if isinstance(value, dict):
        keys = list(value)
        for k in keys:
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise MXNetError(f"{where}: cannot send a dict with a key of type {type(k).__name__} from "
                                 "a worker process (str or int keys only)")
        return {"t": "d", "k": [describe(k, arrays, where) for k in keys],
                "v": [describe(value[k], arrays, where) for k in keys]}
    raise MXNetError(f"{where}: cannot send a value of type {type(value).__module__}.{type(value).__name__} "
                     "from a worker process: a batch may hold NDArrays, numpy arrays, numbers, strings, "
                     "bytes and None, in lists, tuples and dicts (or use thread_pool=True or num_workers=0)")


def _build(desc: dict, arrays: Any, make_nd: Callable[[np.ndarray], Any]) -> Any:
    t = desc["t"]
    if t == "v":
        return desc["v"]
    if t == "i":
        return int(desc["v"])
    if t == "f":
        return float(desc["v"])
    if t in ("nd", "np", "sc"):
        arr = next(arrays)
        arr = arr.view(np.dtype(desc["d"])).reshape(desc["s"])
        return make_nd(arr) if t == "nd" else arr if t == "np" else arr[()]
    if t == "y":
        return next(arrays).tobytes()
    if t == "l":
        return [_build(d, arrays, make_nd) for d in desc["v"]]
    if t == "u":
        return tuple(_build(d, arrays, make_nd) for d in desc["v"])
    if t == "d":
        keys = [_build(k, arrays, make_nd) for k in desc["k"]]
        return {k: _build(v, arrays, make_nd) for k, v in zip(keys, desc["v"])}
    raise MXNetError(f"DataLoader: a worker sent an unknown value kind {t!r}")


def send(conn: Any, head: dict, value: Any, where: str = "DataLoader") -> None:
    """Send ``head`` (a JSON-able dict) and ``value`` over the connection ``conn``."""
    arrays: list[np.ndarray] = []
    tree = describe(value, arrays, where)
    sizes = [a.nbytes for a in arrays]
    conn.send_bytes(json.dumps({"head": head, "tree": tree, "sizes": sizes}).encode())
    for a in arrays:
        conn.send_bytes(memoryview(a.reshape(-1).view(np.uint8)) if a.size else b"")


def recv(conn: Any, make_nd: Callable[[np.ndarray], Any]) -> tuple[dict, Any]:
    """Read one message: its head and its value (NDArrays made from numpy arrays by ``make_nd``)."""
    meta = json.loads(conn.recv_bytes().decode())
    arrays = []
    for size in meta["sizes"]:
        buf = np.empty(size, dtype=np.uint8)
        if size:
            conn.recv_bytes_into(buf)
        else:
            conn.recv_bytes()
        arrays.append(buf)
    return meta["head"], _build(meta["tree"], iter(arrays), make_nd)


def task_bytes(seq: int, indices: Any) -> bytes:
    """A task message: batch ``seq`` of the samples at ``indices`` (ints, strings or tuples of
    them: whatever the batch sampler yields as keys)."""
    keys = [int(i) if isinstance(i, np.integer) else i for i in indices]
    arrays: list[np.ndarray] = []
    tree = describe(keys, arrays, "DataLoader")
    if arrays:
        raise MXNetError("DataLoader: with worker processes the batch sampler must yield lists of "
                         "ints or strings (sample keys), not arrays")
    return json.dumps({"seq": seq, "idx": tree}).encode()


def recv_task(msg: bytes) -> tuple[int, list]:
    """``(seq, indices)`` of a message made by :func:`task_bytes`."""
    task = json.loads(msg.decode())
    return task["seq"], _build(task["idx"], iter(()), lambda a: a)
