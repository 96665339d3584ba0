"""The CPU kernels as plain Python: what a small program runs before numba has compiled it.

A CPU kernel module (one distinct kernel form, :mod:`symjit.compiler.cache`) is plain Python
source: a loop nest over the scalar bodies of :mod:`symjit.ops` (``import``-ed, then wrapped
``numba.njit(inline='always')``) under ``@numba.njit(...)``. Executed with a ``numba`` whose
``njit`` returns the function it is given, it is an ordinary Python function computing the same
elements: the scalar bodies are written to run in plain Python (numba's CUDA simulator runs them
too). :func:`interpret` does that for a module it can vouch for: imports only from ``math``,
``numpy``, ``symjit.ops.*`` (scalar bodies and their helpers) and ``symjit.base`` (the
``MXNetError`` of a data check), no hand-written kernel of ``symjit.kernels`` but those with a
Python form in :data:`TWINS` (the reductions a broadcast gradient runs, the gathers' index clip;
not the GEMMs, convolutions, pooling, softmax, normalisation), and no use of numba besides the
decorators: no ``prange`` (threaded loops), no draws from numba's generator (a sampler's seed:
numpy's generator would give other numbers).

Arithmetic then runs on numpy scalars (an element read from an array) and Python floats (what
``math`` returns), not in numba's machine types: a float64 result is the same to the last bit
(the same IEEE operations in the same order, the same libm; numba's own ``gamma``/``lgamma``
differ from Python's by a few ulps), a float32 one within a few float32 roundings of the
values it is computed from (Python keeps some intermediates of a fused chain in float64 where
numba rounds them to float32, and numba's float32 ``exp``/``tanh`` are within an ulp). Where
Python raises and compiled code gives inf or nan (``math.log(0.0)``, a Python float divided by
zero) the caller runs the compiled kernel instead (:mod:`symjit.compiler.tier`).

>>> src = '''import math
... import numba
... import numpy as np
... from symjit.ops.elementwise import _exp as _i0__exp
... _i0__exp_b = numba.njit(inline='always', error_model='numpy')(_i0__exp)
... @numba.njit(cache=True, nogil=True, error_model='numpy')
... def KERNEL(a0, a1):
...     for i0 in range(a1.shape[0]):
...         a1[i0] = _i0__exp_b(a0[i0])
... '''
>>> import numpy as np
>>> x, y = np.zeros(2), np.empty(2)
>>> interpret(src)(x, y); y.tolist()
[1.0, 1.0]
>>> interpret(src.replace("range", "numba.prange")) is None
True
"""
from __future__ import annotations

import re
import types
from collections.abc import Callable

import numpy as np

from ...kernels.cpu.reduce_axes import reduce_block_of
from ...ops.shape_grad import clip_index

__all__ = ["interpret", "interpretable", "interpret_call", "TWINS", "CALL_TWINS"]

_FROM = re.compile(r"^from\s+(\S+)\s+import\s+(\w+)(?:\s+as\s+(\w+))?\s*$", re.M)
_IMPORT = re.compile(r"^import\s+(\S+)(?:\s+as\s+\w+)?\s*$", re.M)
_PLAIN_MODULES = ("math", "numba", "numpy")
_NUMBA_USE = re.compile(r"\bnumba\.(?!njit\()")   # numba used for anything but the decorators


def _sum_into(x, out, scale):
    """The kernel's float64 sums in its order: four strips when ``B == 1``, else one by one."""
    a_n, r_n, b_n = x.shape
    if b_n == 1:
        strips = np.zeros((a_n, 4))
        r = 0
        while r + 4 <= r_n:
            strips += x[:, r:r + 4, 0]
            r += 4
        for tail in range(r, r_n):
            strips[:, 0] += x[:, tail, 0]
        out[:, 0] = ((strips[:, 0] + strips[:, 1]) + (strips[:, 2] + strips[:, 3])) * scale
        return
    acc = np.zeros((a_n, b_n))
    for r in range(r_n):
        acc += x[:, r, :]
    out[...] = acc * scale


def _reduce_sum(x, out):
    _sum_into(x, out, 1.0)


def _reduce_mean(x, out):
    _sum_into(x, out, 1.0 / x.shape[1])


def _reduce_max(x, out):
    out[...] = x.max(axis=1)


def _reduce_min(x, out):
    out[...] = x.min(axis=1)


def _reduce_argmax(x, out):
    out[...] = x.argmax(axis=1)   # the first maximum; a NaN counts as the maximum, as the kernel's


def _reduce_argmin(x, out):
    out[...] = x.argmin(axis=1)


# Python forms of the hand-written kernels that small programs of elementwise, broadcast and
# reduce ops call (the (A, R, B) reductions of symjit.kernels.cpu.reduce, which a broadcast op's
# gradient runs too, and the gathers' index clip): the same results to the bit (float64 sums
# added in the kernel's order, NaN propagating and first extremes as the kernel's)
TWINS = {("symjit.kernels.cpu.embed", "clip_index"): clip_index,
         ("symjit.kernels.cpu.reduce", "reduce_block"): reduce_block_of,
         ("symjit.kernels.cpu.reduce", "reduce_argmax"): _reduce_argmax,
         ("symjit.kernels.cpu.reduce", "reduce_argmin"): _reduce_argmin,
         ("symjit.kernels.cpu.reduce", "reduce_sum"): _reduce_sum,
         ("symjit.kernels.cpu.reduce", "reduce_mean"): _reduce_mean,
         ("symjit.kernels.cpu.reduce", "reduce_max"): _reduce_max,
         ("symjit.kernels.cpu.reduce", "reduce_min"): _reduce_min}


def _block_copy(big, small, axis, offset, into) -> None:
    """:mod:`symjit.kernels.cpu.copy_axis`'s copy on numpy arrays: the same elements moved."""
    a = int(np.prod(big.shape[:axis], dtype=np.int64))
    b = int(np.prod(big.shape[axis + 1:], dtype=np.int64))
    if a == 0 or small.size == 0:
        return
    n = small.size // a
    rows, part = big.reshape(a, -1)[:, offset * b:offset * b + n], small.reshape(a, n)
    if into:
        rows[...] = part
    else:
        part[...] = rows


def _into_axis(dst, src, axis, offset) -> None:
    _block_copy(dst, src, axis, offset, True)


def _from_axis(src, dst, axis, offset) -> None:
    _block_copy(src, dst, axis, offset, False)


# Python forms of the building blocks a program calls itself (KernelWriter.direct): the block
# copies of Concat, stack and SliceChannel
CALL_TWINS = {("symjit.kernels.cpu.copy_axis", "into_axis"): _into_axis,
              ("symjit.kernels.cpu.copy_axis", "from_axis"): _from_axis}


def interpret_call(module: str, name: str) -> Callable | None:
    """The building block ``name`` of ``module`` as plain Python (:data:`CALL_TWINS`), or None.

    >>> import numpy as np
    >>> out = np.zeros((2, 3))
    >>> interpret_call("symjit.kernels.cpu.copy_axis", "into_axis")(out, np.ones((2, 1)), 1, 2)
    >>> out[:, 2].tolist()
    [1.0, 1.0]
    """
    return CALL_TWINS.get((module, name))


def _njit(*args, **options):
    """``numba.njit`` as the identity: ``njit(f)`` and ``njit(...)(f)`` are ``f``."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]
    return lambda fn: fn


_NUMBA = types.SimpleNamespace(njit=_njit)


def interpretable(source: str) -> bool:
    """Whether a CPU kernel module's ``source`` runs as plain Python with the compiled kernel's
    results (see the module docstring)."""
    if any(imp not in _PLAIN_MODULES for imp in _IMPORT.findall(source)):
        return False
    for module, name, _ in _FROM.findall(source):
        if not (module.startswith("symjit.ops.") or module == "symjit.base" or (module, name) in TWINS):
            return False
    return not (_NUMBA_USE.search(source) or "np.random" in source)


_cache: dict[str, Callable | None] = {}


def interpret(source: str) -> Callable | None:
    """The kernel ``KERNEL`` of a CPU kernel module's ``source`` as a plain Python function
    (one per distinct source in a process), or None if it is not :func:`interpretable`."""
    if source in _cache:
        return _cache[source]
    fn = None
    if interpretable(source):
        namespace = {"__name__": "symjit_interpreted", "numba": _NUMBA}

        def twin(m: re.Match) -> str:   # a hand-written kernel's numpy form, not its numba module
            if (m.group(1), m.group(2)) not in TWINS:
                return m.group(0)
            namespace[m.group(3) or m.group(2)] = TWINS[m.group(1), m.group(2)]
            return ""
        body = _FROM.sub(twin, re.sub(r"^import numba\s*$", "", source, flags=re.M))
        # our own generated code (never a user's): run with numba's decorators as the identity
        exec(compile(body, "<symjit interpreted kernel>", "exec"), namespace)
        fn = namespace.get("KERNEL")
    _cache[source] = fn
    return fn
