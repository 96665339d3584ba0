"""``div(a, b)``: elementwise division as the operators define it, per argument type: IEEE division
for floats (``x / 0`` is inf or nan); for integers C's truncating division (the quotient is stored
truncated) and 0 for a zero divisor, where MXNet's integer kernels stop the process (SIGFPE) and
a float quotient cast to an integer would be garbage. Numba picks the form at typing time
(``numba.extending.overload``), on both targets; plain Python (numba's CUDA simulator) runs the
function itself.

>>> import numpy as np
>>> div(np.int32(7), np.int32(0)), div(7.0, 2.0)
(0, 3.5)
"""
from __future__ import annotations

import numpy as np

from ..jitext import on_install

__all__ = ["div"]


def div(a, b):
    if b == 0 and isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return 0
    return a / b


@on_install
def _register() -> None:
    from numba import types
    from numba.extending import overload

    def typed(a, b):
        if isinstance(a, types.Integer) and isinstance(b, types.Integer):
            return lambda a, b: 0.0 if b == 0 else a / b
        return lambda a, b: a / b

    overload(div, target="cpu", jit_options={"error_model": "numpy"})(typed)
    overload(div, target="cuda")(typed)
