"""``div(a, b)``: elementwise division as the operators define it, per argument type: IEEE division
for floats (``x / 0`` is inf or nan); for integers C's truncating division (the quotient is stored
truncated) and 0 for a zero divisor, where MXNet's integer kernels stop the process (SIGFPE) and
a float quotient cast to an integer would be garbage. Numba picks the form at typing time
(:func:`typed`, registered for every target; a target may register it with options of its own,
as the CPU's :mod:`symjit.lower.cpu.overloads` does); plain Python (numba's CUDA simulator) runs
the function itself.

``float_grad(x, g)`` is the same kind of rule for gradients: ``g`` where ``x`` is a float, 0 where
it is an integer, as MXNet's integer kernels of ``mod``'s gradients give.

>>> import numpy as np
>>> div(np.int32(7), np.int32(0)), div(7.0, 2.0)
(0, 3.5)
>>> float_grad(np.int32(7), 1.0), float_grad(7.0, 1.0)
(0, 1.0)
"""
from __future__ import annotations

import numpy as np

from ..jitext import on_install

__all__ = ["div", "typed", "float_grad"]


def div(a, b):
    if b == 0 and isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return 0
    return a / b


def typed(a, b):
    """The typing function of :func:`div`'s overloads: its form for these numba types."""
    from numba import types
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        return lambda a, b: 0.0 if b == 0 else a / b
    return lambda a, b: a / b


def float_grad(x, g):
    if isinstance(x, (int, np.integer)):
        return 0
    return g


def _float_grad_typed(x, g):
    from numba import types
    if isinstance(x, types.Integer):
        return lambda x, g: 0
    return lambda x, g: g


@on_install
def _register() -> None:
    from numba.extending import overload
    overload(div)(typed)   # every target
    overload(float_grad)(_float_grad_typed)
