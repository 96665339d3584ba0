"""Which kernels run threaded: the name suffix of a hand-written kernel's threaded form when its
input is big enough (:mod:`symjit.kernels.cpu._parallel`)."""
from __future__ import annotations

import math
import re

from ...threads import SPLIT_MIN

SUFFIX = "_parallel"
_CALL = re.compile(r"\w" + SUFFIX + r"\(|\bnumba\.prange\(")


def threaded(k, arr: str) -> str:
    """``"_parallel"`` when the array named ``arr`` holds at least ``SPLIT_MIN`` elements (its
    kernel then splits channels or planes over the threads the policy of :mod:`symjit.threads`
    gives numba), else ``""``."""
    return SUFFIX if math.prod(k.info[arr].shape) >= SPLIT_MIN else ""


def calls_threaded(source: str) -> bool:
    """Whether a kernel's ``source`` calls a threaded form or has a loop on threads
    (:meth:`~symjit.lower.cpu.CPUTarget.open_map_loop`): what ahead-of-time modules cannot hold.

    >>> calls_threaded("    _i0_max_pool2d_forward_parallel(v5, v8, _c1, _c2, _c3)")
    True
    >>> calls_threaded("    for _p1 in numba.prange(v2.shape[0] * v2.shape[1]):")
    True
    >>> calls_threaded("    _i0_max_pool2d_forward(v5, v8, _c1, _c2, _c3)")
    False
    """
    return _CALL.search(source) is not None
