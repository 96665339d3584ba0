"""Devices: ``mx.cpu(i)``, ``mx.gpu(i)``, ``mx.Context`` and the current-context stack."""
from __future__ import annotations

import threading

from .base import MXNetError
from .devices import Device, device_for

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus"]

_DEVTYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}   # host memory, all but gpu
_DEVIDS = {v: k for k, v in _DEVTYPES.items()}


class _ClassValue:
    """A read-only attribute computed on every access, also on the class itself."""

    def __init__(self, get: object):
        self._get = get

    def __get__(self, obj: object, owner: type | None = None) -> Context:
        return self._get()


class Context:
    """A device and its id, printed as MXNet prints it.

    >>> Context('gpu', 2), cpu() == Context('cpu', 0)
    (gpu(2), True)
    """

    _stack = threading.local()

    def __init__(self, device_type: str | Context, device_id: int = 0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in _DEVIDS:
            raise MXNetError(f"unknown device type {device_type!r} (expected one of {sorted(_DEVIDS)})")
        if int(device_id) < 0:
            raise MXNetError(f"device id must be >= 0, got {device_id}")
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def device(self) -> Device:
        """The runtime of this context's device (:mod:`symjit.devices`): allocation, streams,
        kernels and the code-generation target all go through it.

        >>> Context('gpu', 1).device.target_name
        'cuda'
        """
        try:
            return self._device
        except AttributeError:
            self._device: Device = device_for(self)
            return self._device

    def __reduce__(self) -> tuple:
        return Context, (self.device_type, self.device_id)   # the device object stays behind

    @property
    def device_typeid(self) -> int:
        """MXNet's numeric device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)."""
        return _DEVIDS[self.device_type]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self) -> Context:
        stack = _ctx_stack()
        stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ctx_stack().pop()

    default_ctx: Context = _ClassValue(lambda: current_context())
    """The context used when none is given (MXNet's deprecated class attribute: ``Context.default_ctx``
    is a Context, as ``current_context()``)."""


def _ctx_stack() -> list[Context]:
    if not hasattr(Context._stack, "items"):
        Context._stack.items = [Context("cpu", 0)]
    return Context._stack.items


def cpu(device_id: int = 0) -> Context:
    """The CPU context. ``mx.cpu()`` prints as ``cpu(0)``."""
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """A GPU context (arrays on it live in numba.cuda device memory where a GPU is present)."""
    return Context("gpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Pinned host memory; stored like ``cpu``."""
    return Context("cpu_pinned", device_id)


def current_context() -> Context:
    """The innermost ``with ctx:`` context, ``cpu(0)`` by default."""
    return _ctx_stack()[-1]


def num_gpus() -> int:
    """The number of CUDA devices numba can see (0 without numba-cuda or a GPU; numba's CUDA
    simulator counts as one)."""
    try:
        from numba import cuda
        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - numba-cuda missing or driver absent
        return 0
