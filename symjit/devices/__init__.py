"""Devices: one runtime object per device, behind which every device-specific runtime decision lives.

A :class:`~symjit.context.Context` resolves to its :class:`Device` (``ctx.device``): the host's
:class:`~symjit.devices.cpu.CPUDevice` for ``cpu``/``cpu_pinned``/``cpu_shared`` (one object,
host memory is one place), a :class:`~symjit.devices.cuda.CUDADevice` per GPU. The device owns
allocation (``empty``, ``alloc``, ``arena``, ``from_host``), its stream and device scope,
synchronisation, the optimizer update kernels, the thread policy of its compiled code, whether
ahead-of-time modules serve it, and the code-generation :class:`~symjit.lower.target.Target`
compiling for it (``device.target``; the Target classes stay in :mod:`symjit.lower`). Callers ask
the device; none compares device or target names.

Each kind's module is imported when a context of that kind is first resolved: the CUDA one, and
numba.cuda with it, only for GPU contexts. What a device hands out from the layers below it (its
Target, kernel modules, the ahead-of-time loader, the thread policy) is imported when first asked
for, never when this package is imported.

>>> from symjit.context import cpu, cpu_pinned
>>> d = cpu().device
>>> d.target_name, d is cpu_pinned().device, d.host_memory
('cpu', True, True)
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any

import numpy as np

from ..base import MXNetError

__all__ = ["Device", "device_for", "device_class", "made", "provide"]


class Device:
    """The runtime of one device; a new kind subclasses it and is listed in :data:`_KINDS`."""

    target_name = ""       # the code-generation target compiling for this device
    host_memory = False    # arrays are numpy arrays in this process's memory
    aot = False            # ahead-of-time modules (:mod:`symjit.compiler.aot`) may serve its programs

    def __init__(self, device_id: int = 0):
        self.device_id = device_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device_id}>"

    @property
    def target(self) -> Any:
        """The code-generation :class:`~symjit.lower.target.Target` compiling for this device."""
        return provided("target")(self.target_name)

    def check(self, ctx: Any, where: str) -> None:
        """Raise MXNetError (naming ``where`` and ``ctx``) when arrays cannot be placed on ``ctx``."""

    def scope(self) -> Any:
        """A ``with`` block making this device current for the code run inside it."""
        return contextlib.nullcontext()

    def stream(self) -> Any:
        """The stream this device's work is queued on (``0``: none, calls run in order)."""
        return 0

    def synchronize(self) -> None:
        """Wait until the work queued on this device has finished."""

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """New uninitialised storage of ``shape``/``dtype``."""
        raise NotImplementedError

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> Any:
        """New storage of ``shape``/``dtype`` with every element set to ``fill``."""
        raise NotImplementedError

    def arena(self, nbytes: int) -> Any:
        """An uninitialised byte buffer of ``nbytes`` (at least 1)."""
        return self.empty((max(int(nbytes), 1),), np.dtype(np.uint8))

    def from_host(self, arr: np.ndarray) -> Any:
        """New storage holding ``arr`` (C-contiguous); a host device may take ``arr`` itself."""
        raise NotImplementedError

    def upload(self, arr: np.ndarray, into: Any = None) -> Any:
        """``arr`` where this device's kernels read it: ``into`` (storage of ``arr``'s shape made by
        an earlier call) overwritten when given and of that shape, else new storage."""
        raise NotImplementedError

    def update_kernels(self) -> Any:
        """The optimizer update kernels for arrays on this device (functions named as in
        ``symjit.kernels.<target>.optim``, called with the same arguments)."""
        raise NotImplementedError

    def thread_policy(self, blas_threads: Any) -> Any:
        """What sizes the thread pools of this device's compiled code before each forward pass
        (:func:`symjit.threads.policy`), or None."""
        return None


_PROVIDED: dict[str, Any] = {}


def provide(**hooks: Any) -> None:
    """Register what devices hand out from the layers above them, so this package imports none of
    them: ``target`` (the :class:`~symjit.lower.target.Target` of a target name,
    :func:`symjit.lower.target.get_target`) and ``aot_kernels`` (the ahead-of-time loader,
    :class:`symjit.compiler.aot.Kernels`). :mod:`symjit.executor` registers both when imported
    (``import symjit`` imports it).

    >>> from symjit.lower.target import get_target
    >>> _PROVIDED['target'] is get_target
    True
    """
    _PROVIDED.update(hooks)


def provided(name: str) -> Any:
    """The hook registered as ``name`` by :func:`provide`."""
    if name not in _PROVIDED:
        raise MXNetError(f"devices: no {name!r} registered (import symjit first)")
    return _PROVIDED[name]


# device_type -> (module, class) of its kind; every other device type is host memory
_KINDS = {"gpu": ("symjit.devices.cuda", "CUDADevice")}
_HOST = ("symjit.devices.cpu", "CPUDevice")
_MADE: dict[tuple[str, int], Device] = {}


def _load(where: tuple[str, str]) -> type[Device]:
    module, name = where
    return getattr(importlib.import_module(module), name)


def device_for(ctx: Any) -> Device:
    """The device object of a context (made on first use; every host context shares one).

    >>> from symjit.context import gpu
    >>> device_for(gpu(1)).target_name
    'cuda'
    """
    kind = _KINDS.get(ctx.device_type, _HOST)
    key = (kind[0], ctx.device_id if kind is not _HOST else 0)
    dev = _MADE.get(key)
    if dev is None:
        dev = _MADE[key] = _load(kind)(key[1])
    return dev


def device_class(target_name: str) -> type[Device]:
    """The device kind a code-generation target compiles for.

    >>> device_class('cpu').aot, device_class('cuda').aot
    (True, False)
    """
    for kind in (_HOST, *_KINDS.values()):
        cls = _load(kind)
        if cls.target_name == target_name:
            return cls
    raise MXNetError(f"no device runs code of the target {target_name!r}")


def made() -> list[Device]:
    """The device objects made so far in this process."""
    return list(_MADE.values())
