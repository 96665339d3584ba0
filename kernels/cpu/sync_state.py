"""The layout of the barrier state a kernel in parts receives last (``sync``), and of its trailing
part arguments: the one definition the kernels (:mod:`.spin`), the host's part runner
(``symjit.parts``) and the kernel writer (``symjit.lower.writer``) share. Imports nothing heavy
(no numba), so a process running ahead-of-time entries can read it.

>>> s = new_sync()
>>> s.shape == (SYNC_LENGTH,) and int(s[SYNC_ABORT])
0
"""
from __future__ import annotations

from typing import Any

__all__ = ["PART_ARGS", "SYNC_LENGTH", "SYNC_ABORT", "new_sync"]

PART_ARGS = 3
"""The trailing arguments of a kernel in parts: ``part, parts, sync``."""
SYNC_LENGTH = 3
"""A call's barrier state (``spin.barrier``): arrivals, generation, abort flag (int64)."""
SYNC_ABORT = 2
"""Index in a ``sync`` array of the flag the host raises when a part failed: parts waiting at a
barrier then return False instead of waiting for a part that will not come."""


def new_sync() -> Any:
    """A call's barrier state: arrivals, generation, abort flag (int64 zeros)."""
    import numpy as np
    return np.zeros(SYNC_LENGTH, np.int64)
