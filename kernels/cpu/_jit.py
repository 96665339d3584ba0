"""The decorator of the hand-written CPU kernels: ``numba.njit`` whose calls from compiled code are
typed on plain types, so each building block compiles once per array layout, not once per
constant.

numba types a constant in compiled code as a literal (``Literal[int](0)``, ``Literal[bool](True)``)
and compiles a function it calls for those literal types: a building block called with ``0`` at
one site and ``1`` at another, or from a generated kernel that writes ``True`` into its source,
compiled once per distinct constant. :func:`~symjit.kernels.cpu.conv_vec.tile_gemm` (its
register tiles inlined, ~10 s to compile at ``-O1``) was compiled nine times by one LeNet
training in a fresh install, and BatchNorm's channel kernels up to ten times. The dispatcher
here drops the literal before it compiles a call from compiled code (``types.unliteral``): the
caller casts its constant, as it would for any int or bool argument. A call from Python is typed
from the values as numba always does.

>>> import numpy as np
>>> @njit(cache=False)
... def add(x, k):
...     return x + k
>>> @njit(cache=False)
... def both(x):
...     return add(x, 1) + add(x, 2)
>>> both(np.int64(3))
9
>>> len(add.signatures)
1
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba.core import config, types
from numba.core.registry import CPUDispatcher

__all__ = ["njit", "PlainCallDispatcher"]


class PlainCallDispatcher(CPUDispatcher):
    """numba's CPU dispatcher, typing (and compiling) calls from compiled code without literals."""

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def njit(cache: bool = False, **options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(cache=cache, **options)`` on :class:`PlainCallDispatcher` (keyword options
    only, no signatures)."""
    targetoptions = {**options, "nopython": True, "boundscheck": None}

    def wrap(fn: Callable) -> Any:
        if config.DISABLE_JIT:
            return fn
        disp = PlainCallDispatcher(py_func=fn, locals={}, targetoptions=targetoptions)
        if cache:
            disp.enable_caching()
        return disp
    return wrap
