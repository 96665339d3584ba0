"""The CPU target's own forms of symjit's numba helpers, registered by
:meth:`CPUTarget.install <symjit.lower.cpu.CPUTarget.install>` at :func:`symjit.jitext.install`:
``tanh``/``sigmoid`` of a float32 argument through :mod:`symjit.ops.fastmath`'s vectorizable
formulas, and integer ``div`` (:mod:`symjit.ops.intdiv`), both compiled with numpy's error model.
numba prefers a target's own overload to the generic one :mod:`symjit.ops` registers for every
target.

>>> import numba, numpy as np
>>> from symjit.jitext import install
>>> from symjit.lower.target import get_target
>>> _ = get_target('cpu'); install()   # the CPU target's forms, then numba's registration
>>> from symjit.ops.fastmath import tanh
>>> f = numba.njit(lambda v: tanh(v))
>>> float(f(np.float32(0.5))) == float(np.float32(np.tanh(0.5)))
True
"""
from __future__ import annotations

from ...ops import fastmath, intdiv

__all__ = ["register_overloads"]


def register_overloads() -> None:
    """Register the CPU's overloads with numba (once, by :meth:`CPUTarget.install`)."""
    from numba.extending import overload
    overload(fastmath.tanh, target="cpu", jit_options=fastmath.JIT)(fastmath.typer(fastmath.tanh, True))
    overload(fastmath.sigmoid, target="cpu", jit_options=fastmath.JIT)(fastmath.typer(fastmath.sigmoid, True))
    overload(intdiv.div, target="cpu", jit_options={"error_model": "numpy"})(intdiv.typed)
