"""numba's on-disk cache of these kernels, keyed by every source file of ``symjit.kernels``.

numba keys a ``cache=True`` function's cached machine code by its own file alone (a hash of
that file's bytes). These kernels inline code from other files (``optim.py`` compiles the bodies
of ``kernels/optim_steps.py``, ``conv_direct.py`` calls ``conv.py``'s helpers), so an edit there,
or a symjit upgrade that leaves the kernel's own file unchanged, would load stale code from the
``__pycache__`` numba wrote. Importing this module puts two locators in front of numba's own
(:func:`register`): for files inside ``symjit.kernels`` they add a hash of all of the package's
sources to the stamp; other files get numba's usual ones. Both cache where numba's would (beside
the source, or the user-wide cache directory when that is not writable). Every kernel module
imports it before its ``numba.njit(cache=True)`` decorators run (``kernels.cpu`` itself does not:
the ahead-of-time path imports its pure-Python modules without numba).

>>> import numba.core.caching as caching
>>> caching.CacheImpl._locator_classes[0].__name__
'_KernelsInTree'
"""
from __future__ import annotations

import functools
import os

from numba.core import caching

from symjit.base import source_digest

_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir))


@functools.lru_cache(maxsize=1)
def kernels_digest() -> str:
    """A hash of every ``.py`` file under ``symjit.kernels`` (names and bytes; ~1 ms, once)."""
    return source_digest([_ROOT])


def _inside(py_file: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(py_file), _ROOT]) == _ROOT
    except ValueError:      # another drive (Windows)
        return False


class _PackageStamp:
    """The source stamp of numba's locator, with the package's digest and the kernel's module
    name beside it: cached code refers to its module by the name it was imported under, so a
    process that imported the package as top-level ``kernels`` (a doctest run from the source
    tree) must not load what ``symjit.kernels`` cached, nor the reverse."""

    _module = ""

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _inside(py_file):
            return None
        self = super().from_function(py_func, py_file)
        if self is not None:
            self._module = getattr(py_func, "__module__", "") or ""
        return self

    def get_source_stamp(self):
        return (super().get_source_stamp(), kernels_digest(), self._module)


def _numba_locator(name: str) -> type:
    """numba's locator class ``name`` (numba < 0.61 names it with a leading underscore)."""
    return getattr(caching, name, None) or getattr(caching, "_" + name)


class _KernelsInTree(_PackageStamp, _numba_locator("InTreeCacheLocator")):
    pass


class _KernelsUserWide(_PackageStamp, _numba_locator("UserWideCacheLocator")):
    pass


def register() -> None:
    """Put the two locators first in numba's list (once; this module's import does it)."""
    locators = caching.CacheImpl._locator_classes
    if _KernelsInTree not in locators:
        locators[:0] = [_KernelsInTree, _KernelsUserWide]


register()
