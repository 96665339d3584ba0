"""A 1-d array over raw memory, for kernels that take many arrays as one table of addresses.

A fused update of every parameter of a step (:mod:`symjit.kernels.cpu.optim`,
:mod:`symjit.kernels.cuda.optim`) gets one ``int64`` table of the parameters' data addresses
instead of hundreds of array arguments (each of which costs a typing step on the CPU and its
marshalling on a GPU). Inside the kernel, ``view(addr, n, like)`` is the ``n``-element C array of
``like``'s dtype at ``addr``. :func:`make_view` builds that intrinsic for one target's numba
(``numba`` on the CPU, ``numba.cuda`` on a GPU); the caller validates every address, size and
dtype and keeps the arrays alive while their addresses are in use (Numba does no bounds checks).

>>> import numpy as np, numba
>>> from symjit.kernels.cpu.optim import view
>>> @numba.njit
... def first(addr, like):
...     return view(addr, 3, like)[2]
>>> a = np.arange(3, dtype=np.float32)
>>> float(first(a.ctypes.data, a))
2.0
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["make_view"]


def make_view(intrinsic: Callable, types: Any, make_array: Callable, populate_array: Callable) -> Any:
    """The ``view(addr, n, like)`` intrinsic of one numba target, from that target's ``intrinsic``
    decorator, ``types`` module and array-model helpers (``make_array``, ``populate_array``)."""

    def view(typingctx, addr, n, like):
        if not (isinstance(addr, types.Integer) and isinstance(n, types.Integer)
                and isinstance(like, types.Array)):
            return None
        ret = types.Array(like.dtype, 1, "C")

        def codegen(context, builder, sig, args):
            address, count, _ = args
            ary = make_array(ret)(context, builder)
            elem = context.get_data_type(ret.dtype)
            itemsize = context.get_constant(types.intp, context.get_abi_sizeof(elem))
            count = context.cast(builder, count, sig.args[1], types.intp)
            populate_array(ary, data=builder.inttoptr(address, elem.as_pointer()), shape=[count],
                           strides=[itemsize], itemsize=itemsize, meminfo=None)
            return ary._getvalue()

        return ret(addr, n, like), codegen

    return intrinsic(view)
