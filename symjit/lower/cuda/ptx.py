"""PTX of a compiled CUDA program's kernels, without a GPU (``numba.cuda.compile_ptx``).

Each kernel of the generated module is compiled for a compute capability from its argument types
(C-contiguous arrays of the planned values' dtypes and ranks), as the first launch would compile
it on a device. This catches code numba's simulator accepts but the CUDA compiler rejects, and lets
``symjit compile --target cuda --emit ptx --arch sm_90`` show what runs. It needs numba-cuda with
the CUDA compiler packages (``pip install symjit[cuda]``) and the real CUDA target: the simulator
(``NUMBA_ENABLE_CUDASIM=1``) has no compiler.
"""
from __future__ import annotations

import re
from typing import Any

from ...base import MXNetError
from ..target import kernel_signature
from . import CUDATarget

__all__ = ["kernel_ptx", "parse_arch", "has_numba_cuda"]


def parse_arch(arch: str) -> tuple[int, int]:
    """``'sm_90'`` -> ``(9, 0)``; MXNetError for anything else.

    >>> parse_arch('sm_90'), parse_arch('sm_120')
    ((9, 0), (12, 0))
    """
    m = re.fullmatch(r"sm_(\d+)(\d)", arch)
    if m is None:
        raise MXNetError(f"--arch {arch!r}: expected a CUDA architecture such as 'sm_90'")
    return int(m.group(1)), int(m.group(2))


_NEED_EXTRA = "PTX needs numba-cuda with the CUDA compiler packages (pip install 'symjit[cuda]')"


def has_numba_cuda() -> bool:
    """Whether the numba-cuda package is installed: without it ``numba.cuda`` is the older CUDA
    target bundled with numba, whose ``compile_ptx`` rejects symjit's kernels."""
    from importlib import metadata
    try:
        metadata.distribution("numba-cuda")
    except metadata.PackageNotFoundError:
        return False
    return True


def _cuda():
    from numba import config
    if config.ENABLE_CUDASIM:
        raise MXNetError("PTX needs the CUDA compiler: unset NUMBA_ENABLE_CUDASIM (the simulator has none)")
    if not has_numba_cuda():
        raise MXNetError(f"{_NEED_EXTRA}; numba-cuda is not installed, and the numba.cuda bundled with "
                         f"numba cannot compile symjit's kernels")
    try:
        from numba import cuda
        cuda.compile_ptx  # noqa: B018  (absent from some builds)
    except (ImportError, AttributeError) as exc:
        raise MXNetError(f"{_NEED_EXTRA}: {exc}") from None
    return cuda


class _Device:
    """Stands for a device of the requested architecture while device functions (the scalar
    bodies) are compiled: numba-cuda asks the current device for its compute capability there,
    and PTX for an architecture needs no device."""

    def __init__(self, cc: tuple[int, int]):
        self.compute_capability = cc


def kernel_ptx(compiled, arch: str = "sm_90") -> dict[str, str]:
    """kernel name -> PTX for every kernel of a loaded CUDA program (``compiled.module``)."""
    if not isinstance(compiled.target, CUDATarget) or compiled.module is None:
        raise MXNetError("PTX is for a loaded program of the cuda target")
    return {name: function_ptx(name, getattr(compiled.module, name).py_func,
                               kernel_signature(compiled, name), arch)
            for name in compiled.program.kernels}


def function_ptx(name: str, fn: Any, sig: tuple, arch: str = "sm_90") -> str:
    """The PTX of one CUDA kernel (its Python function ``fn``, argument types ``sig``) for
    ``arch``, compiled without a GPU; the compiler's refusal is an MXNetError naming the kernel."""
    from unittest import mock

    from ... import jitext
    cuda, cc = _cuda(), parse_arch(arch)
    jitext.install()
    with mock.patch("numba.cuda.dispatcher.get_current_device", lambda: _Device(cc)):
        try:
            return cuda.compile_ptx(fn, sig, cc=cc)[0]
        except Exception as exc:  # noqa: BLE001 - the compiler's message, naming the kernel
            raise MXNetError(f"kernel {name}: the CUDA compiler rejected it for {arch}: "
                             f"{type(exc).__name__}: {exc}") from None
