"""Which kernels run threaded: the name suffix of a hand-written kernel's threaded form when its
input is big enough (:mod:`symjit.kernels.cpu._parallel`)."""
from __future__ import annotations

import math

from ...threads import SPLIT_MIN


def threaded(k, arr: str) -> str:
    """``"_parallel"`` when the array named ``arr`` holds at least ``SPLIT_MIN`` elements (its
    kernel then splits channels or planes over the threads the policy of :mod:`symjit.threads`
    gives numba), else ``""``."""
    return "_parallel" if math.prod(k.info[arr].shape) >= SPLIT_MIN else ""
