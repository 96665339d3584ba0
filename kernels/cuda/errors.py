"""Data checks on a GPU without raising in a kernel: a flag the kernels set, read by the host.

A kernel that finds a bad value (an index outside its axis with ``mode='raise'``, a softmax length
outside the axis) writes its check's code (1, 2, ...) into the device's flag (:func:`flags`, an
``int32[1]`` device array, passed to the kernel by the host program at every launch) and goes on
with a safe value (clipped). After its launches, the host program calls :func:`check` with its
checks' messages: it reads the flag (waiting for the stream), clears it and raises
:class:`~symjit.base.MXNetError` with the message of the code found. Only programs with such
checks pay the read.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from symjit.base import MXNetError

__all__ = ["flags", "check"]

_FLAGS: dict[int, Any] = {}   # device id -> its flag


def _device() -> int:
    dev = cuda.current_context().device
    return int(getattr(dev, "id", 0))   # the simulator's one device has no id


def flags() -> Any:
    """The current device's error flag, made (zero) on first use."""
    key = _device()
    flag = _FLAGS.get(key)
    if flag is None:
        flag = _FLAGS[key] = cuda.to_device(np.zeros(1, np.int32))
    return flag


flags.array_arg = True   # a kernel takes it as an int32[::1] array (not an int64 scalar)


def check(stream: Any, messages: tuple[str, ...]) -> None:
    """Raise the MXNetError of the code a kernel queued on ``stream`` left in the flag (then
    clear it); return when it is 0."""
    flag = flags()
    host = flag.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    code = int(host[0])
    if code:
        flag.copy_to_device(np.zeros(1, np.int32), stream=stream)
        if stream:
            stream.synchronize()
        raise MXNetError(messages[code - 1] if 0 < code <= len(messages) else
                         f"a kernel reported the unknown check code {code}")
