"""DLPack exchange of CPU NDArrays (``mx.nd.to_dlpack_for_read``, ``to_dlpack_for_write``,
``from_dlpack``): a PyCapsule viewing the array's own memory, and an NDArray viewing a capsule's
(numpy's DLPack support does the protocol). Both sides share the memory: writes through either
show in the other, as in MXNet. ``to_dlpack_for_read`` gives a legacy capsule, which importers
(numpy, symjit) treat as read-only; ``to_dlpack_for_write`` a DLPack 1.0 versioned one, which
they may write. GPU arrays are not exchanged yet: a clear error.

>>> import symjit as mx
>>> x = mx.nd.ones((2, 3))
>>> y = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
>>> y[0, 0] = 5
>>> float(x.asnumpy()[0, 0])
5.0
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import DTypeError, MXNetError
from ..context import Context
from .ndarray import NDArray

__all__ = ["to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"]

_CPU = 1   # DLPack's kDLCPU


def _export(data: Any, where: str, writable: bool) -> Any:
    if not isinstance(data, NDArray):
        raise DTypeError(f"{where}: data must be an NDArray, got {type(data).__name__}")
    if data.context.device_typeid != _CPU:   # MXNet's device type ids are DLPack's
        raise MXNetError(f"{where}: only CPU NDArrays are exchanged through DLPack, not {data.context}")
    data.wait_to_read()
    host = data._host()
    # DLPack 1.0's versioned capsule carries writability; the legacy one is imported read-only
    return host.__dlpack__(max_version=(1, 0)) if writable else host.__dlpack__()


def to_dlpack_for_read(data: NDArray) -> Any:
    """A DLPack PyCapsule viewing ``data`` (after pending writes to it finished)."""
    return _export(data, "to_dlpack_for_read", False)


def to_dlpack_for_write(data: NDArray) -> Any:
    """A DLPack PyCapsule viewing ``data``, through which the consumer may write it (a DLPack 1.0
    versioned capsule, which says it is writable)."""
    return _export(data, "to_dlpack_for_write", True)


class _Capsule:
    """A bare DLPack capsule dressed in the protocol numpy's ``from_dlpack`` expects."""

    def __init__(self, capsule: Any):
        self._capsule = capsule

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_CPU, 0)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray viewing the memory of a DLPack capsule (or of any object with ``__dlpack__``)."""
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    try:
        arr = np.from_dlpack(source)
    except (TypeError, ValueError, RuntimeError, BufferError) as exc:
        raise MXNetError(f"from_dlpack: cannot read the tensor ({exc}); only CPU tensors are supported, "
                         "and a capsule can be consumed once") from None
    if not arr.flags.c_contiguous:
        raise MXNetError(f"from_dlpack: the tensor is not C-contiguous (strides {arr.strides})")
    return NDArray(arr, Context("cpu", 0))
