"""``mx.libinfo``: MXNet's information about its native library.

symjit has no native library and no C headers: it compiles its kernels with numba when a symbol is
bound. ``__version__`` is the MXNet API level (as ``mx.__version__``); :func:`find_lib_path`,
:func:`find_include_path` and :func:`find_conf_path` raise a RuntimeError saying so, which is what
MXNet raises when it cannot find its files, so scripts that handle a missing library keep working.

>>> import symjit as mx
>>> mx.libinfo.__version__
'1.9.1'
>>> mx.libinfo.find_lib_path()  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
symjit.libinfo.NoNativeLibrary: libinfo.find_lib_path: symjit has no native library ...
"""
from __future__ import annotations

from ._version import __version__
from .base import MXNetError

__all__ = ["find_lib_path", "find_include_path", "find_conf_path", "NoNativeLibrary", "__version__"]

_WHY = ("symjit has no native library (libmxnet) and no C headers: it compiles its kernels with numba "
        "when a symbol is bound, so there is nothing to link against or load")


class NoNativeLibrary(MXNetError, RuntimeError):
    """Asked for a file of MXNet's native library (a RuntimeError, as MXNet raises when it cannot
    find one)."""


def find_lib_path(prefix: str = "libmxnet") -> list[str]:
    """MXNet's paths of its shared libraries: raises :class:`NoNativeLibrary` in symjit."""
    raise NoNativeLibrary(f"libinfo.find_lib_path: {_WHY} ({prefix!r} requested)")


def find_include_path() -> str:
    """MXNet's path of its C headers: raises :class:`NoNativeLibrary` in symjit."""
    raise NoNativeLibrary(f"libinfo.find_include_path: {_WHY}")


def find_conf_path(prefix: str = "tvmop") -> list[str]:
    """MXNet's paths of its TVM operator configuration: raises :class:`NoNativeLibrary` in symjit."""
    raise NoNativeLibrary(f"libinfo.find_conf_path: {_WHY} ({prefix!r} requested; symjit has no TVM "
                          f"operators)")
