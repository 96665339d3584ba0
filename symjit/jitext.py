"""symjit's numba extensions, registered when symjit first compiles, not at ``import symjit``.

The operator records' helpers (``digamma``, the samplers' hashes, ``tanh``/``sigmoid``'s float32
formulas, integer ``div``, ...) are plain Python functions that generated kernels call. numba
can call them from compiled code once they are registered (``register_jitable``, ``overload``,
``intrinsic``); registering needs ``import numba``, which is most of ``import symjit``'s time. So
the modules mark them here (:func:`jitable`, :func:`on_install`) and :func:`install` registers
them all, once, before symjit hands numba anything to compile: before a generated module is
loaded (``compiler/cache.py``) and before a CUDA kernel is built. A helper marked after
:func:`install` has run is registered at once. Code that compiles symjit's helpers with numba
directly (a test, a notebook) calls :func:`install` first.

>>> from symjit.ops.elementwise_math import digamma
>>> install()
>>> import numba
>>> round(numba.njit(lambda v: digamma(v))(1.0), 6)
-0.577216
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["jitable", "on_install", "install", "installed", "typeof"]

_pending_jitables: list[tuple[Callable, dict]] = []
_pending_hooks: list[Callable[[], None]] = []
_installed = False


def _register(fn: Callable, options: dict) -> None:
    from numba.extending import register_jitable
    if options:
        register_jitable(**options)(fn)
    else:                           # numba's decorator tells its two forms apart by the keywords
        register_jitable(fn)


def jitable(fn: Callable | None = None, **options: Any) -> Any:
    """Mark ``fn`` as callable from numba-compiled code (``register_jitable(**options)`` at
    :func:`install`); ``fn`` itself is returned unchanged, a plain Python function."""
    def mark(f: Callable) -> Callable:
        if _installed:
            _register(f, options)
        else:
            _pending_jitables.append((f, options))
        return f
    return mark if fn is None else mark(fn)


def on_install(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` (which imports numba and registers overloads or intrinsics) at :func:`install`,
    or now if that has run."""
    if _installed:
        hook()
    else:
        _pending_hooks.append(hook)
    return hook


def install() -> None:
    """Register every marked helper with numba (once; later calls return at once)."""
    global _installed
    if _installed:
        return
    _installed = True
    for fn, options in _pending_jitables:
        _register(fn, options)
    for hook in _pending_hooks:
        hook()
    _pending_jitables.clear()
    _pending_hooks.clear()


def installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return _installed


_ARRAY_TYPES: dict[tuple, Any] = {}


def typeof(value: Any) -> Any:
    """``numba.typeof(value)``, with the types of plain numpy arrays kept by what decides them
    (dtype, rank, layout, writeable, aligned): numba's own typeof costs ~20 us per array, which a
    bind of many small programs pays for every call it checks.

    >>> import numpy as np
    >>> print(typeof(np.zeros((2, 3), np.float32)))
    array(float32, 2d, C)
    >>> typeof(np.zeros((2, 3))[:, 1]).layout, str(typeof(np.float32(1.0)))
    ('A', 'float32')
    """
    if type(value) is not np.ndarray:
        from numba import typeof as numba_typeof
        return numba_typeof(value)
    f = value.flags
    key = (value.dtype, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    found = _ARRAY_TYPES.get(key)
    if found is None:
        from numba import typeof as numba_typeof
        found = _ARRAY_TYPES[key] = numba_typeof(value)
    return found
